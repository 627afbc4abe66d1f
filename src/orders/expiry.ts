import type pg from 'pg';
import type { Schedule } from '../jobs/schedules.js';

/** Orders one transaction expires: short transactions, so a backlog never holds many pets' rows at once. */
export const EXPIRY_BATCH = 100;

/**
 * Expires every placed order whose hold ended at or before `at` (the scheduled sweep passes its
 * clock's time; tests pass theirs): each batch (migration 018's expire_due_orders, one statement)
 * moves its orders to `expired` and their pets to `available`, with order.expired and pet.updated,
 * as complete and cancel write theirs. An order another path expired first (a change to its pet
 * releases an ended hold) is no longer placed and not found. Returns how many expired; tells
 * `eventsQueued` when a batch queued deliveries.
 */
export async function expireDueOrders(pool: pg.Pool, at: Date, opts: { batch?: number; eventsQueued?: () => void } = {}): Promise<number> {
  const batch = opts.batch ?? EXPIRY_BATCH;
  let expired = 0;
  for (;;) {
    const { rows } = await pool.query<{ expired: number; queued: number }>('SELECT expired, queued FROM expire_due_orders($1, $2)', [at, batch]);
    const { expired: n, queued } = rows[0]!;
    if (queued > 0) opts.eventsQueued?.();
    expired += n;
    // A short batch: nothing more was due (or the rest is held by a complete or cancel in flight).
    if (n < batch) return expired;
  }
}

/** The sweep that writes expiries, every minute (the hold itself is exact, and so are the reads: sql.ts); app.ts gives it to the scheduler (app.jobs.schedule). */
export const orderExpirySchedule = (pool: pg.Pool, eventsQueued: () => void): Schedule => ({
  queue: 'order-expiry',
  cron: '* * * * *',
  run: (at) => expireDueOrders(pool, at, { eventsQueued }),
});

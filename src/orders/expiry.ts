import type pg from 'pg';
import type { EventRecorder } from '../events/repository.js';
import type { Pet } from '../pets/repository.js';
import { withTransaction } from '../db/transaction.js';
import type { Schedule } from '../jobs/schedules.js';
import type { Order } from './repository.js';
import { EXPIRE_DUE } from './sql.js';

/** Orders one transaction expires: short transactions, so a backlog never holds many pets' rows at once. */
export const EXPIRY_BATCH = 100;

/**
 * Expires every placed order whose hold ended at or before `at` (the scheduled sweep passes its
 * clock's time; tests pass theirs): each batch moves its orders to `expired` and their pets to
 * `available`, and writes `order.expired` (for the owner and the pet's creator) and `pet.updated`
 * (for the creator) in the same transaction, as complete and cancel do. Returns how many expired.
 */
export async function expireDueOrders(pool: pg.Pool, events: EventRecorder, at: Date, batch = EXPIRY_BATCH): Promise<number> {
  let expired = 0;
  for (;;) {
    const n = await withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ order: Order; owner: string; pet: Pet & { createdBy: number | null } }>(EXPIRE_DUE, [at, batch]);
      for (const { order, owner, pet } of rows) {
        const { createdBy, ...shown } = pet;
        await events.record(client, 'order.expired', order, [Number(owner), createdBy]);
        await events.record(client, 'pet.updated', shown, [createdBy]);
      }
      return rows.length;
    });
    expired += n;
    // A short batch: nothing more was due (or the rest is held by a complete or cancel in flight).
    if (n < batch) return expired;
  }
}

/** The sweep that expires holds, every minute (the hold itself is exact: sql.ts); app.ts gives it to the scheduler (app.jobs.schedule). */
export const orderExpirySchedule = (pool: pg.Pool, events: EventRecorder): Schedule => ({
  queue: 'order-expiry',
  cron: '* * * * *',
  run: (at) => expireDueOrders(pool, events, at),
});

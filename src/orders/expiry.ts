import type pg from 'pg';
import type { EventRecorder } from '../events/repository.js';
import type { Pet } from '../pets/repository.js';
import { withTransaction } from '../db/transaction.js';
import type { Schedule } from '../jobs/schedules.js';
import type { Order } from './repository.js';
import { EXPIRE_DUE, RELEASE_PET_HOLD } from './sql.js';

/** Orders one transaction expires: short transactions, so a backlog never holds many pets' rows at once. */
export const EXPIRY_BATCH = 100;

/**
 * In `client`'s transaction, runs an expiring statement (EXPIRE_DUE, RELEASE_PET_HOLD) and writes,
 * for each order it expired, `order.expired` (for the owner and the pet's creator) and
 * `pet.updated` (for the creator), as complete and cancel do. The statement expires an order only
 * while it is still placed, so whichever path expires it writes its events, once. Returns how many.
 */
async function expireWithEvents(client: pg.PoolClient, events: EventRecorder, sql: string, params: unknown[]): Promise<number> {
  const { rows } = await client.query<{ order: Order; owner: string; pet: Pet & { createdBy: number | null } }>(sql, params);
  for (const { order, owner, pet } of rows) {
    const { createdBy, ...shown } = pet;
    await events.record(client, 'order.expired', order, [Number(owner), createdBy]);
    await events.record(client, 'pet.updated', shown, [createdBy]);
  }
  return rows.length;
}

/**
 * In `client`'s transaction, before a change that needs the pet's hold (placeOrder, updatePet,
 * deletePet): expires the pet's placed order if its hold ended at or before `at`, with its events.
 */
export const releaseLapsedHold = (client: pg.PoolClient, events: EventRecorder, petId: number, at: Date) =>
  expireWithEvents(client, events, RELEASE_PET_HOLD, [at, petId]);

/**
 * Expires every placed order whose hold ended at or before `at` (the scheduled sweep passes its
 * clock's time; tests pass theirs): each batch moves its orders to `expired` and their pets to
 * `available`, with their events, in one transaction. Orders another path expired first
 * (releaseLapsedHold) are no longer placed and not found. Returns how many expired.
 */
export async function expireDueOrders(pool: pg.Pool, events: EventRecorder, at: Date, batch = EXPIRY_BATCH): Promise<number> {
  let expired = 0;
  for (;;) {
    const n = await withTransaction(pool, (client) => expireWithEvents(client, events, EXPIRE_DUE, [at, batch]));
    expired += n;
    // A short batch: nothing more was due (or the rest is held by a complete or cancel in flight).
    if (n < batch) return expired;
  }
}

/** The sweep that writes expiries, every minute (the hold itself is exact, and so are the reads: sql.ts); app.ts gives it to the scheduler (app.jobs.schedule). */
export const orderExpirySchedule = (pool: pg.Pool, events: EventRecorder): Schedule => ({
  queue: 'order-expiry',
  cron: '* * * * *',
  run: (at) => expireDueOrders(pool, events, at),
});

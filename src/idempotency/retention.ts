import type pg from 'pg';
import type { Schedule } from '../jobs/schedules.js';
import { IDEMPOTENCY_RETENTION_HOURS } from '../limits.js';

/**
 * Idempotency-Keys with their saved answers, IDEMPOTENCY_RETENTION_HOURS after their first use, at
 * `at` (the scheduled sweep passes its clock's time; tests pass theirs): one DELETE over the
 * created_at index. Returns how many keys it removed.
 */
export async function deleteOldIdempotencyKeys(pool: pg.Pool, at: Date): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < $1::timestamptz - make_interval(hours => $2)`, [at, IDEMPOTENCY_RETENTION_HOURS]);
  return rowCount ?? 0;
}

/** The sweep that ends Idempotency-Keys' retention, hourly; app.ts gives it to the scheduler (app.jobs.schedule). */
export const idempotencyKeyExpirySchedule = (pool: pg.Pool): Schedule => ({
  queue: 'idempotency-key-expiry',
  cron: '0 * * * *',
  run: (at) => deleteOldIdempotencyKeys(pool, at),
});

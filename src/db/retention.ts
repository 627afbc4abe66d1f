import type pg from 'pg';
import { EVENT_RETENTION_DAYS, IDEMPOTENCY_RETENTION_HOURS } from '../limits.js';

/*
 * What is past its documented retention, deleted at a given time (the scheduled sweeps pass their
 * clock's: `retentionSchedules`, given to the scheduler in app.ts; tests pass theirs). Each is one DELETE over a created_at index;
 * each returns how many rows it removed.
 */

/** Idempotency-Keys with their saved answers, IDEMPOTENCY_RETENTION_HOURS after their first use. */
export async function deleteOldIdempotencyKeys(pool: pg.Pool, at: Date): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < $1::timestamptz - make_interval(hours => $2)`, [at, IDEMPOTENCY_RETENTION_HOURS]);
  return rowCount ?? 0;
}

/** Events EVENT_RETENTION_DAYS old, with their recipients and delivery attempts (ON DELETE CASCADE in migration 011). */
export async function deleteOldEvents(pool: pg.Pool, at: Date): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM events WHERE created_at < $1::timestamptz - make_interval(days => $2)`, [at, EVENT_RETENTION_DAYS]);
  return rowCount ?? 0;
}

/** The retention sweeps, hourly, in the shape the scheduler takes (jobs/schedules.ts's Schedule; app.ts registers them). */
export const retentionSchedules = (pool: pg.Pool) => [
  { queue: 'event-retention', cron: '0 * * * *', run: (at: Date) => deleteOldEvents(pool, at) },
  { queue: 'idempotency-key-expiry', cron: '0 * * * *', run: (at: Date) => deleteOldIdempotencyKeys(pool, at) },
];

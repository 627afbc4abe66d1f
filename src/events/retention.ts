import type pg from 'pg';
import type { Schedule } from '../jobs/schedules.js';
import { EVENT_RETENTION_DAYS } from '../limits.js';

/**
 * Events EVENT_RETENTION_DAYS old at `at` (the scheduled sweep passes its clock's time; tests pass
 * theirs), with their recipients and delivery attempts (ON DELETE CASCADE in migration 011): one
 * DELETE over the created_at index. Returns how many events it removed.
 */
export async function deleteOldEvents(pool: pg.Pool, at: Date): Promise<number> {
  const { rowCount } = await pool.query(`DELETE FROM events WHERE created_at < $1::timestamptz - make_interval(days => $2)`, [at, EVENT_RETENTION_DAYS]);
  return rowCount ?? 0;
}

/** The sweep that ends events' retention, hourly; app.ts gives it to the scheduler (app.jobs.schedule). */
export const eventRetentionSchedule = (pool: pg.Pool): Schedule => ({
  queue: 'event-retention',
  cron: '0 * * * *',
  run: (at) => deleteOldEvents(pool, at),
});

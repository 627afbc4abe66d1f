import type pg from 'pg';
import type { PgBoss } from 'pg-boss';
import type { Clock } from '../clock.js';

/**
 * A sweep pg-boss's scheduler runs: what owns the work registers it (app.jobs.schedule, jobs/plugin.ts;
 * the service's list is in app.ts), one job per cron occurrence across every instance, taken by one worker. */
export interface Schedule {
  /** The pg-boss queue, also the schedule's name. */
  queue: string;
  /** When, in UTC. */
  cron: string;
  /** The sweep itself, at a time its caller gives (a test's clock, or the instance's). */
  run(at: Date): Promise<unknown>;
}

/**
 * Registers each schedule (an upsert: every instance writes the same row at start) and this
 * instance's worker for it. pg-boss's scheduler (`schedule: true`, jobs/queue.ts) sends each
 * occurrence once across the instances: one claims the cron pass, and the occurrence's job is a
 * singleton of its minute. A failed sweep is not retried (retryLimit 0): the next occurrence
 * does the same work; `missed: 'once'` sends one catch-up job for occurrences no pass saw (all
 * instances down at the top of the hour). Sweeps may overlap: each is safe to run twice at once.
 */
export async function startSchedules(boss: PgBoss, schedules: Schedule[], clock: Clock): Promise<void> {
  for (const { queue, cron, run } of schedules) {
    await boss.createQueue(queue, { retryLimit: 0, expireInSeconds: 15 * 60 });
    await boss.schedule(queue, cron, null, { tz: 'UTC', missed: 'once' });
    // Polled every 10 s: a sweep lags its minute by that at most; the hold itself is exact (orders/sql.ts).
    await boss.work(queue, { pollingIntervalSeconds: 10 }, async () => {
      await run(new Date(clock()));
    });
  }
}

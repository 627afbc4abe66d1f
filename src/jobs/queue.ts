import { PgBoss, type ConstructorOptions } from 'pg-boss';
import type pg from 'pg';

/** pg-boss's `db` option: statements on a given client (a request's transaction) or the pool. */
export const onClient = (db: pg.Pool | pg.PoolClient) => ({
  executeSql: async (text: string, values?: unknown[]) => db.query(text, values as unknown[]),
});

/**
 * Starts pg-boss on a small pool of its own in the service's database (schema `pgboss`, created
 * or migrated at start under pg-boss's own lock): its polling and maintenance never take a
 * connection a request waits for. Jobs are still queued on a request's own connection (`onClient`).
 * Workers poll; nothing here needs LISTEN/NOTIFY, so a transaction pooler in front changes nothing.
 * Every instance runs pg-boss's scheduler (`schedule: true`): its cron pass is claimed by one
 * instance at a time, so a schedule sends each occurrence once however many run (jobs/schedules.ts).
 * `clock`: pg-boss's own time and timers, for tests that drive the scheduler (pg-boss's TestClock).
 */
export async function startQueue(
  connection: pg.PoolConfig,
  opts: { onError: (err: Error) => void; clock?: ConstructorOptions['clock'] },
): Promise<PgBoss> {
  const boss = new PgBoss({
    ...(connection as Record<string, string>),
    max: 4,
    application_name: 'animal-store-jobs',
    schedule: true,
    // No pg-boss spans: the workers' polling (fairWorkers.ts, ten looks a second) would be a trace each; a job's insert is traced under its request by instrumentation-pg.
    openTelemetry: { enabled: false },
    ...(opts.clock && { clock: opts.clock }),
  });
  // pg-boss reports a failed background pass (a lost connection, an outage) as an event; unhandled, it would end the process.
  boss.on('error', opts.onError);
  await boss.start();
  // Each queue is created by what owns its jobs: the delivery queue by webhooks/ (webhooks/queue.ts), a sweep's by its schedule (schedules.ts).
  return boss;
}

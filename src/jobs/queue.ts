import { PgBoss, type ConstructorOptions } from 'pg-boss';
import type pg from 'pg';

/** The queue of webhook deliveries (pg-boss, in the service's own database). */
export const DELIVERY_QUEUE = 'webhook-delivery';

/**
 * One attempt to send one event to one endpoint of `accountId` (whose share of the workers it counts
 * against); `series` names a delivery or a redelivery (`redelivery`), `attempt` counts from 1 within it.
 */
export interface DeliveryJob {
  eventId: number;
  endpointId: number;
  accountId: number;
  series: string;
  attempt: number;
  redelivery?: true;
}

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
  opts: { timeoutMs: number; onError: (err: Error) => void; clock?: ConstructorOptions['clock'] },
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
  // pg-boss's own retries only cover a worker that died or threw (a database error); the delivery
  // schedule with its jitter is ours (jobs/webhookDelivery.ts), one job per attempt.
  await boss.createQueue(DELIVERY_QUEUE, { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: Math.ceil(opts.timeoutMs / 1000) + 60 });
  return boss;
}

/**
 * Queues jobs in the transaction of `client`: they commit with the change that made them, or
 * not at all. `startAfter` delays a retry.
 */
export async function enqueueDeliveries(boss: PgBoss, client: pg.PoolClient, jobs: Array<DeliveryJob & { startAfter?: Date }>): Promise<void> {
  if (jobs.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    // Grouped by endpoint, so the workers can cap how many of them one endpoint holds (fairWorkers.ts).
    jobs.map(({ startAfter, ...data }) => ({ data, group: { id: String(data.endpointId) }, ...(startAfter && { startAfter }) })),
    { db: onClient(client) },
  );
}

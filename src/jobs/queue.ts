import pg from 'pg';
import { PgBoss, type ConstructorOptions, type Db, type Job, type JobAttempt } from 'pg-boss';
import { withTransaction } from '../db/transaction.js';
import type { Settling } from './fairWorkers.js';

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
  const pool = { max: 4, application_name: 'animal-store-jobs' };
  const clocked = opts.clock && sessionPool({ ...connection, ...pool }, opts.onError);
  const boss = new PgBoss({
    ...(connection as Record<string, string>),
    ...pool,
    schedule: true,
    // No pg-boss spans: the workers' polling (fairWorkers.ts, ten looks a second) would be a trace each; a job's insert is traced under its request by instrumentation-pg.
    openTelemetry: { enabled: false },
    ...(clocked && { clock: opts.clock, db: clocked.db }),
  });
  // pg-boss reports a failed background pass (a lost connection, an outage) as an event; unhandled, it would end the process.
  boss.on('error', opts.onError);
  if (clocked) boss.once('stopped', () => void clocked.pool.end().catch(opts.onError));
  await boss.start();
  // Each queue is created by what owns its jobs: the delivery queue by webhooks/ (webhooks/queue.ts), a sweep's by its schedule (schedules.ts).
  return boss;
}

/**
 * pg-boss's `db` when a TestClock drives it: a pool whose session statements (the clock's opt-in)
 * run in pg-pool's `onConnect`, awaited before a new connection is handed out. pg-boss's own pool
 * queues them from its 'connect' event, so the checkout's first statement was sent to a client
 * still running them (pg 8's "already executing a query" deprecation; an error in pg 9).
 */
function sessionPool(config: pg.PoolConfig, onError: (err: Error) => void): { pool: pg.Pool; db: Db } {
  let statements: string[] = [];
  const pool = new pg.Pool({
    ...config,
    onConnect: async (client: pg.ClientBase) => {
      for (const statement of statements) await client.query(statement);
    },
  });
  // An idle connection's error (the server ending it), as pg-boss's own pool reports it.
  pool.on('error', onError);
  const db: Db = {
    executeSql: (text, values) => pool.query(text, values as unknown[]),
    // pg-boss sets them before its first statement and clears them at stop; connections already open
    // would miss a set given later, so that is refused rather than applied to some sessions only.
    async setSessionStatements(next) {
      if (next.length > 0 && pool.totalCount > 0) throw new Error('session statements must be set before the pool opens a connection');
      statements = next;
    },
    poolCounts: () => ({ max: config.max ?? 10, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
  return { pool, db };
}

/**
 * Returns claimed jobs that never started to the queue as they were, in one transaction on `pool`:
 * each is deleted (fenced by its attempt) and inserted again with its data, priority and group, due
 * now. pg-boss's `fail` would count a retry and wait out its backoff; its restore is not public.
 */
export async function handBack(boss: PgBoss, pool: pg.Pool, queue: string, jobs: Array<Job<object>>, priority: number): Promise<void> {
  await withTransaction(pool, async (client) => {
    const db = onClient(client);
    await boss.deleteJob(queue, jobs.map((job) => ({ id: job.id, retryCount: job.retryCount })), { db });
    await boss.insert(
      queue,
      jobs.map((job) => ({ data: job.data, priority, ...(job.groupId && { group: { id: job.groupId, ...(job.groupTier && { tier: job.groupTier }) } }) })),
      { db },
    );
  });
}

/** The advisory lock namespace of a bucket's claims (any constant shared by all instances; migrations use 727274001). */
const BUCKET_LOCK = 727_274_003;

/**
 * Claims up to `batchSize` due jobs of one bucket (the jobs of priority `bucket`, one group), with at
 * most `limit` of the group active at once across every instance: pg-boss counts the group's active
 * jobs in the statement (`groupConcurrency`), and a transaction-level advisory lock of the bucket makes
 * two instances' claims of the same bucket take turns, each counting what the other claimed (two
 * concurrent statements would each count the same jobs and claim past the limit together).
 */
export async function fetchBucket<T>(
  boss: PgBoss,
  pool: pg.Pool,
  queue: string,
  { bucket, batchSize, limit, settling }: { bucket: number; batchSize: number; limit: number; settling: Settling },
): Promise<Array<Job<T>>> {
  // BEGIN with the lock in one round trip (the keys are integers), then the bucket's ended jobs completed or failed
  // (so the count below leaves them out) and the fetch, one after another: pg-boss's calls reach the connection a
  // tick after they are made, so nothing may be queued behind them before they return.
  return withTransaction(
    pool,
    async (client) => {
      const db = onClient(client);
      if (settling.complete.length > 0) await boss.complete(queue, settling.complete, null, { db });
      for (const { attempt, message } of settling.fail) await boss.fail(queue, attempt, { message }, { db });
      return boss.fetch<T>(queue, { batchSize, minPriority: bucket, maxPriority: bucket, groupConcurrency: limit, db });
    },
    `BEGIN; SELECT pg_advisory_xact_lock(${BUCKET_LOCK}, ${Math.trunc(bucket)})`,
  );
}

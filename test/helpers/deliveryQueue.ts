import type pg from 'pg';
import type { ConstructorOptions, PgBoss } from 'pg-boss';
import { startQueue } from '../../src/jobs/queue.js';
import { createDeliveryQueue } from '../../src/webhooks/queue.js';

/**
 * The job queue (src/jobs/queue.ts) with the delivery queue in it, as the service's plugins leave
 * it, for a test process that makes pg-boss's schema or enqueues deliveries without them (the
 * template database, the scheduler test).
 */
export async function startQueueWithDeliveries(
  connection: pg.PoolConfig,
  opts: { timeoutMs: number; onError: (err: Error) => void; clock?: ConstructorOptions['clock'] },
): Promise<PgBoss> {
  const boss = await startQueue(connection, { onError: opts.onError, ...(opts.clock && { clock: opts.clock }) });
  await createDeliveryQueue(boss, opts.timeoutMs);
  return boss;
}

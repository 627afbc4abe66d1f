import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { onClient } from '../jobs/queue.js';

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

/**
 * Creates the delivery queue (at every start: pg-boss keeps an existing one). pg-boss's own retries
 * only cover a worker that died or threw (a database error); the delivery schedule with its jitter
 * is ours (delivery.ts), one job per attempt. A job expires a minute past the delivery timeout.
 */
export async function createDeliveryQueue(boss: PgBoss, timeoutMs: number): Promise<void> {
  await boss.createQueue(DELIVERY_QUEUE, { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: Math.ceil(timeoutMs / 1000) + 60 });
}

/**
 * Queues jobs in the transaction of `client`: they commit with the change that made them, or
 * not at all. `startAfter` delays a retry.
 */
export async function enqueueDeliveries(boss: PgBoss, client: pg.PoolClient, jobs: Array<DeliveryJob & { startAfter?: Date }>): Promise<void> {
  if (jobs.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    // Grouped by endpoint, so the workers can cap how many of them one endpoint holds (jobs/fairWorkers.ts).
    jobs.map(({ startAfter, ...data }) => ({ data, group: { id: String(data.endpointId) }, ...(startAfter && { startAfter }) })),
    { db: onClient(client) },
  );
}

import type { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { onClient } from '../jobs/queue.js';

/** The queue of webhook deliveries (pg-boss, in the service's own database). */
export const DELIVERY_QUEUE = 'webhook-delivery';
/** Deliveries given up on: out of the webhook retry schedule, or of pg-boss's own retries (docs/WEBHOOKS.md). */
export const DEAD_LETTER_QUEUE = 'webhook-dead-letter';
/** How long a dead letter is kept. */
export const DEAD_LETTER_RETENTION_DAYS = 14;

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

/** A dead-lettered delivery: the job, and why it was given up. */
export type DeadLetter = DeliveryJob & { reason: string };

/**
 * Creates the delivery queue and its dead-letter queue (at every start: pg-boss keeps an existing
 * queue, so the dead letter is set on it too). pg-boss's own retries only cover a worker that died
 * or threw (a database error); the delivery schedule with its jitter is ours (delivery.ts), one job
 * per attempt. A job expires a minute past the delivery timeout. Dead letters are kept DEAD_LETTER_RETENTION_DAYS.
 */
export async function createDeliveryQueue(boss: PgBoss, timeoutMs: number): Promise<void> {
  await boss.createQueue(DEAD_LETTER_QUEUE, { retentionSeconds: DEAD_LETTER_RETENTION_DAYS * 86_400 });
  await boss.createQueue(DELIVERY_QUEUE, { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: Math.ceil(timeoutMs / 1000) + 60, deadLetter: DEAD_LETTER_QUEUE });
  await boss.updateQueue(DELIVERY_QUEUE, { deadLetter: DEAD_LETTER_QUEUE });
}

/**
 * The bucket of an endpoint's deliveries: their priority, which is the endpoint's id, so that a fetch
 * takes one endpoint's due jobs by range (jobs/fairWorkers.ts). The queue never orders by it otherwise.
 * Ids past pg-boss's integer priority share bucket 0, whose jobs are fetched like an endpoint's.
 */
export const bucketOf = (endpointId: number) => (endpointId <= 2 ** 31 - 1 ? endpointId : 0);

/**
 * Queues jobs in the transaction of `client`: they commit with the change that made them, or
 * not at all. `startAfter` delays a retry.
 */
export async function enqueueDeliveries(boss: PgBoss, client: pg.PoolClient, jobs: Array<DeliveryJob & { startAfter?: Date }>): Promise<void> {
  if (jobs.length === 0) return;
  await boss.insert(
    DELIVERY_QUEUE,
    // Grouped by endpoint, so that pg-boss counts how many of an endpoint's are active across every instance.
    jobs.map(({ startAfter, ...data }) => ({ data, priority: bucketOf(data.endpointId), group: { id: String(data.endpointId) }, ...(startAfter && { startAfter }) })),
    { db: onClient(client) },
  );
}

/** Puts a delivery given up on into the dead-letter queue, in the transaction of `client`. */
export async function deadLetter(boss: PgBoss, client: pg.PoolClient, letter: DeadLetter): Promise<void> {
  await boss.insert(DEAD_LETTER_QUEUE, [{ data: letter }], { db: onClient(client) });
}

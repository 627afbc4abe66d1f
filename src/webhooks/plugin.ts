import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Config } from '../config.js';
import { startFairWorkers, type FairWorkers } from '../jobs/fairWorkers.js';
import { fetchBucket, handBack } from '../jobs/queue.js';
import { deliveryBuckets, webhookDelivery } from './delivery.js';
import { endpointLimits } from './endpointLimits.js';
import { startOutboxDispatcher } from './outbox.js';
import { createDeliveryQueue, DEAD_LETTER_QUEUE, DEAD_LETTER_RETENTION_DAYS, DELIVERY_QUEUE, type DeliveryJob } from './queue.js';
import { secretBox, type SecretBox } from './secrets.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Webhooks (docs/WEBHOOKS.md): the box that seals endpoint secrets, and `outboxWritten`, to call once a
     * write that put delivery intents in the outbox has committed: this instance's dispatcher makes them jobs now.
     */
    webhooks: { secrets: SecretBox; outboxWritten(): void };
  }
}

/**
 * Connections of the delivery workers' own pools: their reads and records never wait for, or hold, one
 * an API request needs; failures' transactions have the smaller of them, so that a wave of failing
 * receivers cannot hold up the statements every delivery makes.
 */
const DELIVERY_POOL_MAX = 4;
const FAILURE_POOL_MAX = 2;
/** Claims (jobs/queue.ts fetchBucket) wait for no delivery's statement: the time a worker waits for its next job. */
const CLAIM_POOL_MAX = 2;
/** The outbox's dispatcher runs one transaction at a time. */
const OUTBOX_POOL_MAX = 1;

/**
 * Webhook delivery in the job queue (jobs/plugin.ts): the delivery queue and its dead-letter queue,
 * their metrics, the box that seals endpoint secrets, the outbox's dispatcher (outbox.ts: on every
 * instance, each write's intents made jobs by the instance that wrote them, or by any within the
 * backstop) and this instance's delivery workers (WEBHOOK_CONCURRENCY at once; 0 runs none here),
 * each on a pool of its own, which stop, finishing what they hold, before the queue does.
 */
export default fp(
  async function webhooksPlugin(app: FastifyInstance, opts: { config: Config }) {
    const { webhooks } = opts.config;
    const pool = app.database.pool;
    const boss = app.jobs.boss;
    await createDeliveryQueue(boss, webhooks.timeoutMs);
    const secrets = secretBox(webhooks.secretKey);
    if (!webhooks.secretKey) app.log.warn('WEBHOOK_SECRET_KEY is unset: webhook endpoint secrets are stored unencrypted (set it in production; docs/CONFIGURATION.md).');
    const dispatched = new Counter({
      name: 'animal_store_webhook_outbox_dispatched_total',
      help: 'Delivery intents this instance took from the outbox and queued as delivery jobs (docs/WEBHOOKS.md, "From a change to a delivery").',
      registers: [app.metricsRegistry],
    });
    let workers: FairWorkers | undefined;
    const outboxPool = app.database.openPool('webhook-outbox', OUTBOX_POOL_MAX);
    const outbox = startOutboxDispatcher(boss, outboxPool, {
      dispatched(jobs, buckets) {
        dispatched.inc(jobs);
        workers?.lookNow(buckets);
      },
      onError: app.jobs.onError,
    });
    app.decorate('webhooks', { secrets, outboxWritten: outbox.written });
    /** The workers' own pools, closed once they have stopped. */
    const pools = [outboxPool];
    app.jobs.beforeStop(async (timeoutMs) => {
      await Promise.all([outbox.stop(), workers?.stop(timeoutMs)]);
      await Promise.all(pools.map((p) => p.end()));
    });

    const deliveries = new Counter({
      name: 'animal_store_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (retried later), dead_lettered (failed, the last attempt of the schedule: in the dead-letter queue), disabled (the endpoint was disabled), skipped (endpoint gone or disabled, or attempt already made), deferred (taken as its endpoint was paused or another attempt probed it: queued again).',
      labelNames: ['outcome'],
      registers: [app.metricsRegistry],
    });
    const latency = new Histogram({
      name: 'animal_store_webhook_commit_to_delivery_seconds',
      help: "Seconds from an event's change (its transaction's start) to a 2xx from the endpoint, for every successful attempt.",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600, 86400],
      registers: [app.metricsRegistry],
    });
    new Gauge({
      name: 'animal_store_webhook_queue_depth',
      help: `Webhook delivery jobs waiting (due or scheduled for a retry) and running, and deliveries given up on (dead_letter: in the dead-letter queue, kept ${DEAD_LETTER_RETENTION_DAYS} days), across all instances.`,
      labelNames: ['state'],
      registers: [app.metricsRegistry],
      async collect() {
        // pg-boss's job table (its documented schema, docs/sql/job-table.md), read when scraped.
        const { rows } = await pool.query<{ waiting: number; active: number; dead: number }>(
          `SELECT count(*) FILTER (WHERE name = $1 AND state IN ('created', 'retry'))::int AS waiting,
                  count(*) FILTER (WHERE name = $1 AND state = 'active')::int AS active,
                  count(*) FILTER (WHERE name = $2 AND state < 'completed')::int AS dead
             FROM pgboss.job WHERE name IN ($1, $2)`,
          [DELIVERY_QUEUE, DEAD_LETTER_QUEUE],
        );
        this.set({ state: 'waiting' }, rows[0]!.waiting);
        this.set({ state: 'active' }, rows[0]!.active);
        this.set({ state: 'dead_letter' }, rows[0]!.dead);
      },
    });

    if (webhooks.concurrency === 0) return;
    const own = app.database.openPool('webhooks', DELIVERY_POOL_MAX);
    const failures = app.database.openPool('webhook-failures', FAILURE_POOL_MAX);
    const claims = app.database.openPool('webhook-claims', CLAIM_POOL_MAX);
    const deliver = webhookDelivery({ pool: own, failures }, boss, secrets, webhooks);
    // A slow answer is one that takes more than a tenth of the timeout (1 s of 10).
    const limits = endpointLimits(webhooks.perEndpoint, webhooks.timeoutMs / 10);
    // Fair delivery (docs/WEBHOOKS.md): the accounts with due deliveries share this instance's workers max-min by
    // worker-time, an endpoint has at most its limit in flight across the fleet, and a paused one none
    // (test/faults/webhooksFairness.test.ts, webhooksHostile.test.ts).
    workers = startFairWorkers<DeliveryJob>(
      boss,
      DELIVERY_QUEUE,
      { concurrency: webhooks.concurrency, reserve: webhooks.reserve, perAccount: webhooks.perAccount, pollMs: webhooks.pollSeconds * 1000 },
      {
        discover: deliveryBuckets(own, limits.of, webhooks.perEndpoint),
        fetch: (bucket, batchSize, limit, settling) => fetchBucket<DeliveryJob>(boss, claims, DELIVERY_QUEUE, { bucket, batchSize, limit, settling }),
        async run(job, release) {
          // The shares bound the requests: the worker takes its next delivery once this one's answer is in, while it is recorded.
          const { outcome, createdAt, attempt } = await deliver(job.data, release);
          deliveries.inc({ outcome });
          if (attempt) limits.record(job.data.endpointId, attempt);
          if (outcome === 'delivered' && createdAt) latency.observe((Date.now() - Date.parse(createdAt)) / 1000);
        },
        handBack: (jobs, bucket) => handBack(boss, claims, DELIVERY_QUEUE, jobs, bucket),
        onError: app.jobs.onError,
      },
    );
    pools.push(own, failures, claims);
  },
  { name: 'webhooks', dependencies: ['database', 'metrics', 'jobs'] },
);

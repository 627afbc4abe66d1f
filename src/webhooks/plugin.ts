import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Config } from '../config.js';
import { startFairWorkers } from '../jobs/fairWorkers.js';
import { endpointExclusions, webhookDelivery } from './delivery.js';
import { createDeliveryQueue, DELIVERY_QUEUE, type DeliveryJob } from './queue.js';
import { secretBox, type SecretBox } from './secrets.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Webhooks (docs/WEBHOOKS.md): the box that seals endpoint secrets. */
    webhooks: { secrets: SecretBox };
  }
}

/**
 * Webhook delivery in the job queue (jobs/plugin.ts): the delivery queue, its metrics, the box that
 * seals endpoint secrets, and this instance's delivery workers (WEBHOOK_CONCURRENCY at once; 0 runs
 * none here), which stop, finishing what they hold, before the queue does.
 */
export default fp(
  async function webhooksPlugin(app: FastifyInstance, opts: { config: Config }) {
    const { webhooks } = opts.config;
    const pool = app.database.pool;
    const boss = app.jobs.boss;
    await createDeliveryQueue(boss, webhooks.timeoutMs);
    const secrets = secretBox(webhooks.secretKey);
    if (!webhooks.secretKey) app.log.warn('WEBHOOK_SECRET_KEY is unset: webhook endpoint secrets are stored unencrypted (set it in production; docs/CONFIGURATION.md).');
    app.decorate('webhooks', { secrets });

    const deliveries = new Counter({
      name: 'animal_store_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (retried if attempts remain), disabled (the endpoint was disabled), skipped (endpoint gone or disabled, or attempt already made), deferred (taken as its endpoint was paused: queued again for the end of the pause).',
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
      help: 'Webhook delivery jobs waiting (due or scheduled for a retry) and running, across all instances.',
      labelNames: ['state'],
      registers: [app.metricsRegistry],
      async collect() {
        // pg-boss's job table (its documented schema, docs/sql/job-table.md), read when scraped.
        const { rows } = await pool.query<{ waiting: number; active: number }>(
          `SELECT count(*) FILTER (WHERE state IN ('created', 'retry'))::int AS waiting, count(*) FILTER (WHERE state = 'active')::int AS active
             FROM pgboss.job WHERE name = $1`,
          [DELIVERY_QUEUE],
        );
        this.set({ state: 'waiting' }, rows[0]!.waiting);
        this.set({ state: 'active' }, rows[0]!.active);
      },
    });

    if (webhooks.concurrency === 0) return;
    const exclusions = endpointExclusions(pool);
    const deliver = webhookDelivery(pool, boss, secrets, webhooks, exclusions.paused);
    // Shares of this instance's workers (docs/WEBHOOKS.md, "Fair delivery"): one account's endpoints, however
    // many and however slow, hold at most `perAccount` of them while other accounts' deliveries are due, and one
    // endpoint at most `perEndpoint`, so endpoints that hang until the timeout cannot hold up their own account's
    // others either (test/faults/webhooksHostile.test.ts, webhooksFairness.test.ts).
    const workers = startFairWorkers<DeliveryJob>(
      boss,
      DELIVERY_QUEUE,
      { concurrency: webhooks.concurrency, perAccount: webhooks.perAccount, perGroup: webhooks.perEndpoint, pollMs: webhooks.pollSeconds * 1000 },
      {
        excluded: exclusions.excluded,
        async run(job, release) {
          // The shares bound the requests: the worker takes its next delivery once this one's answer is in, while it is recorded.
          const { outcome, createdAt } = await deliver(job.data, release);
          deliveries.inc({ outcome });
          if (outcome === 'delivered' && createdAt) latency.observe((Date.now() - Date.parse(createdAt)) / 1000);
        },
        onError: app.jobs.onError,
      },
    );
    app.jobs.beforeStop((timeoutMs) => workers.stop(timeoutMs));
  },
  { name: 'webhooks', dependencies: ['database', 'metrics', 'jobs'] },
);

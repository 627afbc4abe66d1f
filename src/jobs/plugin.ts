import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { PgBoss } from 'pg-boss';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Config } from '../config.js';
import { embeddedConnection } from '../db/embeddedPostgres.js';
import { secretBox, type SecretBox } from '../webhooks/secrets.js';
import { DELIVERY_QUEUE, startQueue, type DeliveryJob } from './queue.js';
import { webhookDelivery } from './webhookDelivery.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Background work (docs/ARCHITECTURE.md): the job queue, and the box that seals webhook secrets. */
    jobs: { boss: PgBoss; secrets: SecretBox };
  }
}

/**
 * Starts the job queue in the service's database and this instance's webhook workers
 * (WEBHOOK_CONCURRENCY at once; 0 runs none here). Workers stop, finishing what they hold,
 * before the database closes.
 */
export default fp(
  async function jobsPlugin(app: FastifyInstance, opts: { config: Config }) {
    const { webhooks } = opts.config;
    const pool = app.database.pool;
    const { databaseUrl, dataDir } = opts.config;
    const boss = await startQueue(databaseUrl ? { connectionString: databaseUrl } : embeddedConnection(dataDir), {
      timeoutMs: webhooks.timeoutMs,
      // Debug only: pg-boss retries on its own, and an outage is already reported once per interval by
      // the request path and readiness (errors/, health/); its workers would add a line per poll.
      onError: (err) => app.log.debug({ err: err.message, code: (err as { code?: string }).code }, 'job queue database error'),
    });
    const secrets = secretBox(webhooks.secretKey);
    if (!webhooks.secretKey) app.log.warn('WEBHOOK_SECRET_KEY is unset: webhook endpoint secrets are stored unencrypted (set it in production; docs/CONFIGURATION.md).');
    app.decorate('jobs', { boss, secrets });
    app.addHook('onClose', async () => {
      await boss.stop({ graceful: true, close: false, timeout: webhooks.timeoutMs + 5000 });
    });

    const deliveries = new Counter({
      name: 'animal_store_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (retried if attempts remain), disabled (the endpoint was disabled), skipped (endpoint gone or disabled, or attempt already made).',
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
    const deliver = webhookDelivery(pool, boss, secrets, webhooks);
    // At most a quarter of this instance's workers per endpoint (pg-boss groups, in memory): endpoints that
    // hang until the timeout cannot take every worker and hold up the others (test/faults/webhooksHostile.test.ts).
    const perEndpoint = Math.max(1, Math.floor(webhooks.concurrency / 4));
    // One job per worker, so a delivery hanging until the timeout holds only its own endpoint's slot. A worker
    // that finishes a job fetches the next at once instead of waiting out the poll (pg-boss's notifyWorker, for
    // every worker of ours holding a job, this one among them): a backlog drains at the receivers' pace, and an
    // idle worker, whose last fetch found nothing, polls.
    const workId = await boss.work<DeliveryJob>(
      DELIVERY_QUEUE,
      { localConcurrency: webhooks.concurrency, localGroupConcurrency: perEndpoint, pollingIntervalSeconds: webhooks.pollSeconds, batchSize: 1 },
      async ([job]) => {
        const { outcome, createdAt } = await deliver(job!.data);
        deliveries.inc({ outcome });
        if (outcome === 'delivered' && createdAt) latency.observe((Date.now() - Date.parse(createdAt)) / 1000);
        for (const worker of boss.getWipData()) if (worker.workId === workId && worker.count > 0) boss.notifyWorker(worker.id);
      },
    );
  },
  { name: 'jobs', dependencies: ['database', 'metrics'] },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Registry } from 'prom-client';
import { isWorker, shareWithPrimary } from './cluster.js';
import { createMetrics, type Metrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics of this process (see metrics/metrics.ts), read at /metrics; undefined when METRICS=false. */
    metrics: Metrics | undefined;
    metricsRegistry: Registry;
  }
}

const statusClass = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

/**
 * Records every response: its duration by operation and status class, the rate limiter's
 * decision, idempotent replays. Pool and limiter state are read when scraped, not per request.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, opts: { enabled: boolean }) {
    const registry = new Registry();
    app.decorate('metricsRegistry', registry);
    if (!opts.enabled) {
      app.decorate('metrics', undefined);
      return;
    }
    const metrics = createMetrics(registry, {
      pool: () => app.hasDecorator('database') ? { total: app.database.pool.totalCount, idle: app.database.pool.idleCount, waiting: app.database.pool.waitingCount } : undefined,
      limiterMode: () => (app.hasDecorator('rateLimitStore') ? app.rateLimitStore.mode() : undefined),
    });
    if (isWorker()) shareWithPrimary(registry);
    app.decorate('metrics', metrics);

    app.addHook('onResponse', (request, reply, done) => {
      const operation = request.routeOptions.config.operationId ?? 'other';
      metrics.requestDuration.observe({ operation, status_class: statusClass[Math.floor(reply.statusCode / 100)] ?? '5xx' }, reply.elapsedTime / 1000);
      const limit = request.rateLimit;
      if (limit) metrics.rateLimitDecisions.inc({ plan: limit.plan, outcome: limit.outcome });
      if (reply.getHeader('idempotent-replayed') === 'true') metrics.idempotentReplays.inc();
      done();
    });
  },
  { name: 'metrics' },
);

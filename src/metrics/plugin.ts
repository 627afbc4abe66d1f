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

/**
 * Records every response: its duration by operation and status class, the rate limiter's
 * decision, idempotent replays. Pool and limiter state are read when scraped, not per request.
 * `operations`: the document's operationIds, each prepared a series at start.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, opts: { enabled: boolean; operations: string[] }) {
    const registry = new Registry();
    app.decorate('metricsRegistry', registry);
    if (!opts.enabled) {
      app.decorate('metrics', undefined);
      return;
    }
    const metrics = createMetrics(
      registry,
      {
        pool: () => (app.hasDecorator('database') ? { total: app.database.pool.totalCount, idle: app.database.pool.idleCount, waiting: app.database.pool.waitingCount } : undefined),
        limiterMode: () => (app.hasDecorator('rateLimitStore') ? app.rateLimitStore.mode() : undefined),
      },
      opts.operations,
    );
    if (isWorker()) shareWithPrimary(registry);
    app.decorate('metrics', metrics);

    app.addHook('onResponse', (request, reply, done) => {
      metrics.request(request.routeOptions.config.operationId, reply.statusCode, reply.elapsedTime / 1000);
      const limit = request.rateLimit;
      if (limit) metrics.rateLimitDecision(limit.plan, limit.outcome);
      if (reply.getHeader('idempotent-replayed') === 'true') metrics.idempotentReplay();
      done();
    });
  },
  { name: 'metrics' },
);

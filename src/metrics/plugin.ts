import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Registry } from 'prom-client';
import { startMetricsListener, type MetricsListener } from './listener.js';
import { createMetrics, type Metrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics of this process (see metrics/metrics.ts), read at /metrics; undefined when METRICS=false. */
    metrics: Metrics | undefined;
    /**
     * The registry /metrics reads: another plugin adds a metric of its own with
     * `new Counter({ name, help, registers: [app.metricsRegistry] })` (plugin dependency: 'metrics').
     */
    metricsRegistry: Registry;
    /** Where this process's metrics listener answers; undefined when METRICS=false. */
    readonly metricsUrl: string | undefined;
  }
}

export interface MetricsOptions {
  enabled: boolean;
  /** The document's operationIds, each given its own series. */
  operations: string[];
  /** The listener (metrics/listener.ts). */
  listener: { host: string; port: number; token: string | undefined };
}

/**
 * Records every response: its duration by operation and status class, the rate limiter's
 * decision, idempotent replays. Pool and limiter state are read when scraped, not per request.
 * Served on a listener of its own, opened with the app and closed with it.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, opts: MetricsOptions) {
    const registry = new Registry();
    app.decorate('metricsRegistry', registry);
    let listener: MetricsListener | undefined;
    app.decorate('metricsUrl', { getter: () => listener?.url });
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
    app.decorate('metrics', metrics);
    app.addHook('onReady', async () => {
      listener = await startMetricsListener({ ...opts.listener, scrape: () => registry.metrics(), contentType: registry.contentType });
    });
    app.addHook('onClose', async () => listener?.close());
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

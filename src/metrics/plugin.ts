import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Registry } from 'prom-client';
import { startMetricsListener, type MetricsListener } from './listener.js';
import { createMetrics, type Metrics } from './metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics of this process (see metrics/metrics.ts), read at /metrics; undefined when METRICS=false. */
    metrics: Metrics | undefined;
    metricsRegistry: Registry;
    /** Where this process's metrics listener answers; undefined when METRICS=false. */
    readonly metricsUrl: string | undefined;
  }
}

export interface MetricsOptions {
  enabled: boolean;
  /** The document's operationIds, each prepared a series at start. */
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
    let metricsUrl: string | undefined;
    app.decorate('metricsUrl', { getter: () => metricsUrl });
    if (!opts.enabled) {
      app.decorate('metrics', undefined);
      return;
    }
    const metrics = createMetrics(
      registry,
      {
        pool: () => (app.hasDecorator('database') ? { total: app.database.pool.totalCount, idle: app.database.pool.idleCount, waiting: app.database.pool.waitingCount } : undefined),
        limiterMode: () => (app.hasDecorator('rateLimitStore') ? app.rateLimitStore.mode() : undefined),
        openConnections: () => (app.hasDecorator('openConnections') ? app.openConnections() : undefined),
      },
      opts.operations,
    );
    app.decorate('metrics', metrics);
    let listener: MetricsListener | undefined;
    app.addHook('onReady', async () => {
      listener = await startMetricsListener({ ...opts.listener, scrape: () => registry.metrics(), contentType: registry.contentType });
      metricsUrl = listener.url;
    });
    app.addHook('onClose', async () => listener?.close());

    app.observeResponses((request, reply, config) => {
      metrics.request(config.operationId, reply.statusCode, reply.elapsedTime / 1000);
      const limit = request.rateLimit;
      if (limit) metrics.rateLimitDecision(limit.plan, limit.outcome);
      if (reply.getHeader('idempotent-replayed') === 'true') metrics.idempotentReplay();
    });
  },
  { name: 'metrics', dependencies: ['response-observers'] },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { components } from '../../generated/openapi.js';
import { startMetricsListener } from './listener.js';
import { tailHorizonGauge } from './tailHorizon.js';

/** Seconds; from a fast cached answer to the longest a request may take. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
type Plan = components['schemas']['Plan'];
/** Whom the rate limiter counted: a key's plan, or `anonymous` (by client address). */
type LimitedAs = Plan | 'anonymous';
const LIMIT_OUTCOMES = ['allowed', 'limited', 'banned'] as const;

/** The child for each pair of label values (`children[a][b]`), made once here rather than looked up per request. */
function childrenOf<C>(labels: (a: string, b: string) => C, as: readonly string[], bs: readonly string[]): Record<string, Record<string, C>> {
  return Object.fromEntries(as.map((a) => [a, Object.fromEntries(bs.map((b) => [b, labels(a, b)]))]));
}

/** A gauge whose values are read when scraped, not kept up to date per request. */
function gaugeOnScrape(registry: Registry, name: string, help: string, labelNames: string[], read: () => Array<[Record<string, string>, number]>) {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      for (const [labels, value] of read()) this.set(labels, value);
    },
  });
}

/**
 * Every metric the service exports, registered in `registry` (one per app, so tests can build
 * many). `operations` are the document's operationIds; anything else is counted as `other`.
 */
function createMetrics(app: FastifyInstance, registry: Registry, operations: string[], plans: Plan[]) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const requestDuration = new Histogram({
    name: 'animal_store_http_request_duration_seconds',
    help: 'Time from request to response, by openapi.yaml operation (`other`: docs, probes, unknown paths) and status class.',
    labelNames: ['operation', 'status_class'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const byOperation = childrenOf((operation, status_class) => requestDuration.labels({ operation, status_class }), [...operations, 'other'], STATUS_CLASSES);
  const rateLimitDecisions = new Counter({
    name: 'animal_store_rate_limit_decisions_total',
    help: 'Requests counted by the rate limiter, by plan (`anonymous`: counted by client address) and outcome.',
    labelNames: ['plan', 'outcome'],
    registers,
  });
  const decisions = childrenOf((plan, outcome) => rateLimitDecisions.labels({ plan, outcome }), [...plans, 'anonymous'], LIMIT_OUTCOMES);
  const idempotentReplays = new Counter({
    name: 'animal_store_idempotent_replays_total',
    help: 'createPet requests answered with the saved response of an earlier request with the same Idempotency-Key.',
    registers,
  });
  const pool = () => (app.hasDecorator('database') ? app.database.pool : { totalCount: 0, idleCount: 0, waitingCount: 0 });
  gaugeOnScrape(registry, 'animal_store_rate_limit_mode', 'Processes counting rate limits in each mode: shared (Redis), local (by configuration), local-fallback (Redis unreachable).', ['mode'], () => {
    const current = app.hasDecorator('rateLimitStore') ? app.rateLimitStore.mode() : undefined;
    return ['shared', 'local', 'local-fallback'].map((mode) => [{ mode }, mode === current ? 1 : 0]);
  });
  gaugeOnScrape(registry, 'animal_store_db_pool_connections', 'Database pool connections: total (open) and idle.', ['state'], () => [
    [{ state: 'total' }, pool().totalCount],
    [{ state: 'idle' }, pool().idleCount],
  ]);
  gaugeOnScrape(registry, 'animal_store_db_pool_waiting', 'Requests waiting for a database connection (the pool is saturated when this stays above 0).', [], () => [[{}, pool().waitingCount]]);
  tailHorizonGauge(registry, () => (app.hasDecorator('database') ? app.database.pool : undefined));

  return {
    /** One answered request: its operation (undefined outside the API's operations), status and duration. */
    request(operation: string | undefined, statusCode: number, seconds: number): void {
      const classes = byOperation[operation ?? 'other'] ?? byOperation.other!;
      classes[STATUS_CLASSES[Math.min(Math.max(Math.floor(statusCode / 100), 1), 5) - 1]!]!.observe(seconds);
    },
    rateLimitDecision(plan: LimitedAs, outcome: (typeof LIMIT_OUTCOMES)[number]): void {
      decisions[plan]![outcome]!.inc();
    },
    idempotentReplay(): void {
      idempotentReplays.inc();
    },
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics of this process, read at /metrics; undefined when METRICS=false. */
    metrics: ReturnType<typeof createMetrics> | undefined;
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
  /** The document's plans (its Plan enum), each a value of the rate limiter's `plan` label, with `anonymous`. */
  plans: Plan[];
  listener: { host: string; port: number; token: string | undefined };
}

/**
 * Records every response: its duration by operation and status class, the rate limiter's
 * decision, idempotent replays. Pool and limiter state, and the tail horizon's age (a query), are read when scraped, not per request.
 * Served on a listener of its own (listener.ts), opened with the app and closed with it.
 */
export default fp(
  async function metricsPlugin(app: FastifyInstance, opts: MetricsOptions) {
    const registry = new Registry();
    app.decorate('metricsRegistry', registry);
    let listener: Awaited<ReturnType<typeof startMetricsListener>> | undefined;
    app.decorate('metricsUrl', { getter: () => listener?.url });
    if (!opts.enabled) return void app.decorate('metrics', undefined);
    const metrics = createMetrics(app, registry, opts.operations, opts.plans);
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

import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';

/** Seconds; from a fast cached answer to the longest a request may take. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The sources some metrics read when scraped, rather than on every request. */
export interface MetricSources {
  pool(): { total: number; idle: number; waiting: number } | undefined;
  limiterMode(): 'shared' | 'local' | 'local-fallback' | undefined;
}

/** Every metric the service exports, registered in `registry` (one per app, so tests can build many). */
export function createMetrics(registry: Registry, sources: MetricSources) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  return {
    requestDuration: new Histogram({
      name: 'animal_store_http_request_duration_seconds',
      help: 'Time from request to response, by openapi.yaml operation (`other`: docs, probes, unknown paths) and status class.',
      labelNames: ['operation', 'status_class'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    rateLimitDecisions: new Counter({
      name: 'animal_store_rate_limit_decisions_total',
      help: 'Requests counted by the rate limiter, by plan (`anonymous`: counted by client address) and outcome.',
      labelNames: ['plan', 'outcome'] as const,
      registers,
    }),
    idempotentReplays: new Counter({
      name: 'animal_store_idempotent_replays_total',
      help: 'createPet requests answered with the saved response of an earlier request with the same Idempotency-Key.',
      registers,
    }),
    queryDuration: new Histogram({
      name: 'animal_store_db_query_duration_seconds',
      help: 'Time of each database statement, from sending it to its answer, by outcome.',
      labelNames: ['outcome'] as const,
      buckets: DURATION_BUCKETS,
      registers,
    }),
    limiterMode: new Gauge({
      name: 'animal_store_rate_limit_mode',
      help: 'Processes counting rate limits in each mode: shared (Redis), local (by configuration), local-fallback (Redis unreachable).',
      labelNames: ['mode'] as const,
      registers,
      collect() {
        const current = sources.limiterMode();
        for (const mode of ['shared', 'local', 'local-fallback'] as const) this.set({ mode }, mode === current ? 1 : 0);
      },
    }),
    poolConnections: new Gauge({
      name: 'animal_store_db_pool_connections',
      help: 'Database pool connections: total (open) and idle.',
      labelNames: ['state'] as const,
      registers,
      collect() {
        const pool = sources.pool();
        this.set({ state: 'total' }, pool?.total ?? 0);
        this.set({ state: 'idle' }, pool?.idle ?? 0);
      },
    }),
    poolWaiting: new Gauge({
      name: 'animal_store_db_pool_waiting',
      help: 'Requests waiting for a database connection (the pool is saturated when this stays above 0).',
      registers,
      collect() {
        this.set(sources.pool()?.waiting ?? 0);
      },
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

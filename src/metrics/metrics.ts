import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';
import { PLANS } from '../auth/apiKeys.js';

/** Seconds; from a fast cached answer to the longest a request may take. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const LIMITED_AS = [...PLANS, 'anonymous'] as const;
const LIMIT_OUTCOMES = ['allowed', 'limited', 'banned'] as const;

/** The sources some metrics read when scraped, rather than on every request. */
export interface MetricSources {
  pool(): { total: number; idle: number; waiting: number } | undefined;
  limiterMode(): 'shared' | 'local' | 'local-fallback' | undefined;
}

/** `children[a][b]`: the child of `metric` for each pair of label values, made once here rather than per request. */
function childrenOf<C>(labels: (a: string, b: string) => C, as: readonly string[], bs: readonly string[]): Record<string, Record<string, C>> {
  return Object.fromEntries(as.map((a) => [a, Object.fromEntries(bs.map((b) => [b, labels(a, b)]))]));
}

/**
 * Every metric the service exports, registered in `registry` (one per app, so tests can build
 * many). `operations` are the document's operationIds; anything else is counted as `other`.
 */
export function createMetrics(registry: Registry, sources: MetricSources, operations: string[]) {
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
  const decisions = childrenOf((plan, outcome) => rateLimitDecisions.labels({ plan, outcome }), LIMITED_AS, LIMIT_OUTCOMES);
  const idempotentReplays = new Counter({
    name: 'animal_store_idempotent_replays_total',
    help: 'createPet requests answered with the saved response of an earlier request with the same Idempotency-Key.',
    registers,
  });
  const queryDuration = new Histogram({
    name: 'animal_store_db_query_duration_seconds',
    help: 'Time of each database statement, from sending it to its answer, by outcome.',
    labelNames: ['outcome'],
    buckets: DURATION_BUCKETS,
    registers,
  });
  const queries = { ok: queryDuration.labels({ outcome: 'ok' }), error: queryDuration.labels({ outcome: 'error' }) };
  // Read when scraped, not per request.
  new Gauge({
    name: 'animal_store_rate_limit_mode',
    help: 'Processes counting rate limits in each mode: shared (Redis), local (by configuration), local-fallback (Redis unreachable).',
    labelNames: ['mode'],
    registers,
    collect() {
      const current = sources.limiterMode();
      for (const mode of ['shared', 'local', 'local-fallback']) this.set({ mode }, mode === current ? 1 : 0);
    },
  });
  new Gauge({
    name: 'animal_store_db_pool_connections',
    help: 'Database pool connections: total (open) and idle.',
    labelNames: ['state'],
    registers,
    collect() {
      const pool = sources.pool();
      this.set({ state: 'total' }, pool?.total ?? 0);
      this.set({ state: 'idle' }, pool?.idle ?? 0);
    },
  });
  new Gauge({
    name: 'animal_store_db_pool_waiting',
    help: 'Requests waiting for a database connection (the pool is saturated when this stays above 0).',
    registers,
    collect() {
      this.set(sources.pool()?.waiting ?? 0);
    },
  });

  return {
    /** One answered request: its operation (undefined outside the API's operations), status and duration. */
    request(operation: string | undefined, statusCode: number, seconds: number): void {
      const classes = byOperation[operation ?? 'other'] ?? byOperation.other!;
      classes[STATUS_CLASSES[Math.min(Math.max(Math.floor(statusCode / 100), 1), 5) - 1]!]!.observe(seconds);
    },
    rateLimitDecision(plan: (typeof LIMITED_AS)[number], outcome: (typeof LIMIT_OUTCOMES)[number]): void {
      decisions[plan]![outcome]!.inc();
    },
    idempotentReplay(): void {
      idempotentReplays.inc();
    },
    query(seconds: number, failed: boolean): void {
      (failed ? queries.error : queries.ok).observe(seconds);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

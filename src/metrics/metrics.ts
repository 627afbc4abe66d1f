import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client';
import { PLANS } from '../auth/apiKeys.js';
import { labelSets, PreparedCounter, PreparedHistogram } from './preparedMetrics.js';

/** Seconds; from a fast cached answer to the longest a request may take. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const LIMITED_AS = [...PLANS, 'anonymous'] as const;
const LIMIT_OUTCOMES = ['allowed', 'limited', 'banned'] as const;
/** The connection caps (http/connectionLimits.ts): MAX_CONNECTIONS and MAX_CONNECTIONS_PER_ADDRESS. */
const CAPS = ['total', 'address'] as const;

/** The sources some metrics read when scraped, rather than on every request. */
export interface MetricSources {
  pool(): { total: number; idle: number; waiting: number } | undefined;
  limiterMode(): 'shared' | 'local' | 'local-fallback' | undefined;
  openConnections(): number | undefined;
}

/**
 * Every metric the service exports, registered in `registry` (one per app, so tests can build
 * many). Per-request metrics are prepared for every label set at start (preparedMetrics.ts):
 * `operations` are the document's operationIds; anything else is counted as `other`.
 */
export function createMetrics(registry: Registry, sources: MetricSources, operations: string[]) {
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  const operationSeries = new Map([...operations, 'other'].map((op, i) => [op, i * STATUS_CLASSES.length]));
  const other = operationSeries.get('other')!;
  const requestDuration = new PreparedHistogram(
    'animal_store_http_request_duration_seconds',
    'Time from request to response, by openapi.yaml operation (`other`: docs, probes, unknown paths) and status class.',
    labelSets(['operation', 'status_class'], [[...operations, 'other'], STATUS_CLASSES]),
    DURATION_BUCKETS,
    registry,
  );
  const rateLimitDecisions = new PreparedCounter(
    'animal_store_rate_limit_decisions_total',
    'Requests counted by the rate limiter, by plan (`anonymous`: counted by client address) and outcome.',
    labelSets(['plan', 'outcome'], [[...LIMITED_AS], [...LIMIT_OUTCOMES]]),
    registry,
  );
  const idempotentReplays = new PreparedCounter(
    'animal_store_idempotent_replays_total',
    'createPet requests answered with the saved response of an earlier request with the same Idempotency-Key.',
    [{}],
    registry,
  );
  const connectionsRefused = new PreparedCounter(
    'animal_store_connections_refused_total',
    'New connections closed at once, before anything was read: a cap (`total`: MAX_CONNECTIONS, `address`: MAX_CONNECTIONS_PER_ADDRESS) was reached and no connection under it was idle.',
    labelSets(['cap'], [[...CAPS]]),
    registry,
  );
  const idleConnectionsClosed = new PreparedCounter(
    'animal_store_idle_connections_closed_total',
    'Idle keep-alive connections closed to make room for a new one when a cap was reached, longest idle first.',
    labelSets(['cap'], [[...CAPS]]),
    registry,
  );
  // Read when scraped, not per request.
  new Gauge({
    name: 'animal_store_connections_open',
    help: 'Open client connections (MAX_CONNECTIONS caps them).',
    registers,
    collect() {
      this.set(sources.openConnections() ?? 0);
    },
  });
  new Gauge({
    name: 'animal_store_rate_limit_mode',
    help: 'Processes counting rate limits in each mode: shared (Redis), local (by configuration), local-fallback (Redis unreachable).',
    labelNames: ['mode'] as const,
    registers,
    collect() {
      const current = sources.limiterMode();
      for (const mode of ['shared', 'local', 'local-fallback'] as const) this.set({ mode }, mode === current ? 1 : 0);
    },
  });
  new Gauge({
    name: 'animal_store_db_pool_connections',
    help: 'Database pool connections: total (open) and idle.',
    labelNames: ['state'] as const,
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
      const classIndex = Math.min(Math.max(Math.floor(statusCode / 100), 1), 5) - 1;
      requestDuration.observe((operationSeries.get(operation ?? 'other') ?? other) + classIndex, seconds);
    },
    rateLimitDecision(plan: (typeof LIMITED_AS)[number], outcome: (typeof LIMIT_OUTCOMES)[number]): void {
      rateLimitDecisions.inc(LIMITED_AS.indexOf(plan) * LIMIT_OUTCOMES.length + LIMIT_OUTCOMES.indexOf(outcome));
    },
    idempotentReplay(): void {
      idempotentReplays.inc(0);
    },
    connectionRefused(cap: (typeof CAPS)[number]): void {
      connectionsRefused.inc(CAPS.indexOf(cap));
    },
    idleConnectionsClosed(cap: (typeof CAPS)[number], count: number): void {
      idleConnectionsClosed.inc(CAPS.indexOf(cap), count);
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

import { performance } from 'node:perf_hooks';
import type pg from 'pg';

type Callback = (err: Error | null, result?: unknown) => void;

/** What the pool tells about each statement its connections run. */
export interface StatementObserver<T = unknown> {
  /**
   * Optional: called as a statement is sent, with its SQL text (never its parameters) and
   * connection; what it returns comes back to `end`. Left out, nothing is read of the statement.
   */
  start?(sql: string, connection: pg.Client): T;
  /** Called as the statement completes: its duration, and what failed it, if anything. */
  end(ms: number, failed: boolean, error: unknown, started: T | undefined): void;
}

export interface Statements {
  /** Times every statement from now on (the metrics, traces, debug timings); one observer. */
  observe<T>(observer: StatementObserver<T>): void;
  /** Ends the connection of any statement unanswered for `timeoutMs` (called every `intervalMs`; tests call it). */
  check(): void;
  stop(): void;
}

const sending = Symbol('statements sent and not answered yet, oldest first (ms)');
type WatchedClient = pg.PoolClient & { [sending]: number[]; connection?: { stream?: { destroy(): void } } };

/**
 * Wraps each connection's query method once, when the pool first creates it: every statement
 * is timed once, for whoever observes them, and a statement left unanswered for `timeoutMs`
 * (a database that hangs or a network that drops packets without a reset) ends its
 * connection, which fails it and everything queued behind it.
 * Hand-built: pg 8 has no query hook or diagnostics channel, and @opentelemetry/instrumentation-pg
 * times statements only into OpenTelemetry, only while loaded. Instead of pg's own query_timeout: it sets a timer per statement, and under load those
 * timers kept each statement's rows alive past young-generation collections (scavenges ~7×
 * costlier, ~1 MB promoted per scavenge, measured with --trace-gc at 32 connections).
 */
export function watchStatements(pool: pg.Pool, { timeoutMs, intervalMs = 1000, now = () => performance.now() }: { timeoutMs: number; intervalMs?: number; now?: () => number }): Statements {
  let observer: StatementObserver | undefined;
  const clients = new Set<WatchedClient>();
  pool.on('connect', (client) => {
    const c = client as WatchedClient;
    c[sending] = [];
    clients.add(c);
    const query = c.query.bind(c) as (config: unknown, values?: unknown, callback?: Callback) => unknown;
    // Fixed parameters rather than (...args): no array per statement. pg's forms are
    // (config), (config, values), (config, callback) and (config, values, callback).
    (c as { query: unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
      const startedAt = now();
      c[sending].push(startedAt);
      const watcher = observer;
      const started = watcher?.start?.(typeof config === 'string' ? config : ((config as { text?: string } | undefined)?.text ?? ''), c as unknown as pg.Client);
      const answered = (failed: boolean, error: unknown) => {
        c[sending].shift();
        watcher?.end(now() - startedAt, failed, error, started);
      };
      const cb = typeof callback === 'function' ? callback : typeof values === 'function' ? values : undefined;
      if (cb) {
        // pool.query's form: the result comes to a callback.
        const done: Callback = (err, result) => {
          answered(err != null, err ?? undefined);
          (cb as Callback)(err, result);
        };
        return cb === values ? query(config, done) : query(config, values, done);
      }
      const result = query(config, values);
      if (result instanceof Promise) result.then(() => answered(false, undefined), (err: unknown) => answered(true, err));
      return result;
    };
  });
  pool.on('remove', (client) => clients.delete(client as WatchedClient));

  const check = () => {
    const t = now();
    for (const c of clients) {
      const oldest = c[sending][0];
      if (oldest !== undefined && t - oldest >= timeoutMs) c.connection?.stream?.destroy();
    }
  };
  const timer = setInterval(check, intervalMs).unref();
  return {
    observe: (o) => {
      observer = o as StatementObserver;
    },
    check,
    stop: () => clearInterval(timer),
  };
}

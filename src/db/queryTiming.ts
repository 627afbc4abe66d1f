import { performance } from 'node:perf_hooks';
import type pg from 'pg';

const timed = Symbol('timed');
type Callback = (err: Error | null, result?: unknown) => void;

/** What the pool tells about each statement its connections run. */
export interface QueryObserver<T = unknown> {
  /**
   * Optional: called as a statement is sent, with its SQL text (never its parameters) and
   * connection; what it returns comes back to `end`. Left out, nothing is read of the statement.
   */
  start?(sql: string, connection: pg.Client): T;
  /** Called as the statement completes: its duration, and what failed it, if anything. */
  end(ms: number, failed: boolean, error: unknown, started: T | undefined): void;
}

/**
 * Times every statement the pool's connections run (pool.query and transactions alike), once.
 * pg has no hook for this, so each connection's query method is wrapped once, the first
 * time it is handed out.
 */
export function timeQueries<T>(pool: pg.Pool, observer: QueryObserver<T>): void {
  const { start, end } = observer;
  pool.on('acquire', (client) => {
    const c = client as pg.PoolClient & { [timed]?: true };
    if (c[timed]) return;
    c[timed] = true;
    const query = c.query.bind(c) as (...args: unknown[]) => unknown;
    (c as { query: unknown }).query = (...args: unknown[]) => {
      const startedAt = performance.now();
      const first = args[0];
      const started = start?.(typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? ''), c as unknown as pg.Client);
      const last = args.at(-1);
      if (typeof last === 'function') {
        // pool.query's form: the result comes to a callback.
        args[args.length - 1] = (err: Error | null, result: unknown) => {
          end(performance.now() - startedAt, err != null, err ?? undefined, started);
          (last as Callback)(err, result);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result instanceof Promise) {
        result.then(
          () => end(performance.now() - startedAt, false, undefined, started),
          (err: unknown) => end(performance.now() - startedAt, true, err, started),
        );
      }
      return result;
    };
  });
}

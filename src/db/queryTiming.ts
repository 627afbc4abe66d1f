import { performance } from 'node:perf_hooks';
import type pg from 'pg';

const timed = Symbol('timed');
type Callback = (err: Error | null, result?: unknown) => void;

/** Called as a statement is sent; what it returns is called with the statement's duration. */
export type QueryObserver = () => (ms: number, failed: boolean) => void;

/**
 * Times every statement the pool's connections run (pool.query and transactions alike).
 * pg has no hook for this, so each connection's query method is wrapped once, the first
 * time it is handed out.
 */
export function timeQueries(pool: pg.Pool, onQuery: QueryObserver): void {
  pool.on('acquire', (client) => {
    const c = client as pg.PoolClient & { [timed]?: true };
    if (c[timed]) return;
    c[timed] = true;
    const query = c.query.bind(c) as (...args: unknown[]) => unknown;
    (c as { query: unknown }).query = (...args: unknown[]) => {
      const started = performance.now();
      const finished = onQuery();
      const done = (failed: boolean) => finished(performance.now() - started, failed);
      const last = args.at(-1);
      if (typeof last === 'function') {
        // pool.query's form: the result comes to a callback.
        args[args.length - 1] = (err: Error | null, result: unknown) => {
          done(err !== null && err !== undefined);
          (last as Callback)(err, result);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result instanceof Promise) result.then(() => done(false), () => done(true));
      return result;
    };
  });
}

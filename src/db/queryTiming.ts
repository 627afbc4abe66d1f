import { performance } from 'node:perf_hooks';
import type pg from 'pg';

const timed = Symbol('timed');
type Callback = (err: Error | null, result?: unknown) => void;

/** Called as a statement completes: its duration, and what failed it, if anything. */
export type QueryFinished = (ms: number, failed: boolean, error?: unknown) => void;

/** Called as a statement is sent, with its SQL text (never its parameters) and connection (a pool's are pg.Clients). */
export type QueryObserver = (sql: string, connection: pg.Client) => QueryFinished;

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
      const first = args[0];
      const sql = typeof first === 'string' ? first : ((first as { text?: string } | undefined)?.text ?? '');
      const finished = onQuery(sql, c as unknown as pg.Client);
      const done = (failed: boolean, error?: unknown) => finished(performance.now() - started, failed, error);
      const last = args.at(-1);
      if (typeof last === 'function') {
        // pool.query's form: the result comes to a callback.
        args[args.length - 1] = (err: Error | null, result: unknown) => {
          done(err !== null && err !== undefined, err ?? undefined);
          (last as Callback)(err, result);
        };
        return query(...args);
      }
      const result = query(...args);
      if (result instanceof Promise) result.then(() => done(false), (err: unknown) => done(true, err));
      return result;
    };
  });
}

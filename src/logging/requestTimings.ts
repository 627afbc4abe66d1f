import { AsyncLocalStorage } from 'node:async_hooks';

/** Database time spent on behalf of one request, for its debug log line. */
export interface RequestTimings {
  queries: number;
  dbMs: number;
}

const storage = new AsyncLocalStorage<RequestTimings>();

/** Requests are timed only at debug level and below (their log lines carry the timings). */
export const timesRequests = (logLevel: string) => logLevel === 'debug' || logLevel === 'trace';

/** Runs `fn` (the rest of a request) with a fresh timings record; only done at debug level. */
export function withRequestTimings(fn: () => void): RequestTimings {
  const timings = { queries: 0, dbMs: 0 };
  storage.run(timings, fn);
  return timings;
}

/**
 * The timings of the request being served, if it is being timed. Read when a statement is
 * sent: its answer arrives in the connection's own context, not the request's.
 */
export function currentRequestTimings(): RequestTimings | undefined {
  return storage.getStore();
}

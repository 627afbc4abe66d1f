import type { FastifyBaseLogger } from 'fastify';
import type { RedisConnection } from './redisConnection.js';

/** How often Redis is probed while the breaker is open. */
const PROBE_INTERVAL_MS = 500;
/** How often a cluster's masters are checked while the breaker is closed (requests only reach some). */
const WATCH_INTERVAL_MS = 1000;

/** Rejects with `label` if `promise` has not settled within `ms`. */
export function withDeadline<T>(promise: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(label)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Whether requests may ask Redis. Opens on a failed or late answer (or a lost connection);
 * while open, Redis is probed twice a second, and the breaker closes once it answers and
 * `recover` (handing back what was counted locally) has succeeded. On a cluster it is one
 * for all masters, and every master is checked each second while closed too, so "shared"
 * means the whole cluster answers.
 */
export function createBreaker(connection: RedisConnection, opts: { timeoutMs: number; log: FastifyBaseLogger; recover(): Promise<void> }) {
  let probe: NodeJS.Timeout | undefined;
  let probing = false;
  let stopped = false;

  function open(err: Error): void {
    if (probe || stopped) return;
    opts.log.warn({ err: err.message }, 'Redis unavailable: rate limits fall back to this instance');
    probe = setInterval(() => void tryToClose(), PROBE_INTERVAL_MS).unref();
  }

  async function tryToClose(): Promise<void> {
    if (probing) return;
    probing = true;
    try {
      await withDeadline(connection.check(), opts.timeoutMs * 2, 'Redis probe timed out');
      await withDeadline(opts.recover(), opts.timeoutMs * 4, 'Redis reconciliation timed out');
      clearInterval(probe);
      probe = undefined;
      opts.log.info('Redis is back: rate limits are shared again');
    } catch {
      // still down: the next probe tries again
    } finally {
      probing = false;
    }
  }

  let watching = false;
  const watch =
    connection.kind === 'cluster'
      ? setInterval(() => {
          if (probe || watching || connection.client.status !== 'ready') return;
          watching = true;
          withDeadline(connection.check(), opts.timeoutMs * 2, 'Redis Cluster check timed out')
            .catch(open)
            .finally(() => (watching = false));
        }, WATCH_INTERVAL_MS).unref()
      : undefined;

  return {
    open,
    /** Open, or the connection is not ready. */
    isOpen: () => probe !== undefined || connection.client.status !== 'ready',
    stop(): void {
      stopped = true;
      clearInterval(probe);
      clearInterval(watch);
    },
  };
}

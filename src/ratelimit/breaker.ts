import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { RedisConnection } from './redisConnection.js';

const PROBE_INTERVAL_MS = 500;
/** How often a cluster's masters are checked while the breaker is closed (requests only reach some). */
const WATCH_INTERVAL_MS = 1000;
const pause = (ms: number) => sleep(ms, undefined, { ref: false });

export function withDeadline<T>(promise: Promise<T>, ms: number, label: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(label)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Whether requests may ask Redis. Opens on a failed or late answer (or a lost connection);
 * while open, Redis is probed every half second, and the breaker closes once it answers and
 * `recover` (handing back what was counted locally) has succeeded. On a cluster it is one
 * for all masters, and every master is checked each second while closed too, so "shared"
 * means the whole cluster answers.
 */
export function createBreaker(connection: RedisConnection, opts: { timeoutMs: number; log: FastifyBaseLogger; recover(): Promise<void> }) {
  let down = false;
  let stopped = false;

  function open(err: Error): void {
    if (down || stopped) return;
    down = true;
    opts.log.warn({ err: err.message }, 'Redis unavailable: rate limits fall back to this instance');
    void probeUntilBack();
  }

  async function probeUntilBack(): Promise<void> {
    while (!stopped) {
      await pause(PROBE_INTERVAL_MS);
      try {
        await withDeadline(connection.check(), opts.timeoutMs * 2, 'Redis probe timed out');
        await withDeadline(opts.recover(), opts.timeoutMs * 4, 'Redis reconciliation timed out');
        down = false;
        return opts.log.info('Redis is back: rate limits are shared again');
      } catch {
        // still down: the next probe tries again
      }
    }
  }

  async function watchCluster(): Promise<void> {
    while (!stopped) {
      await pause(WATCH_INTERVAL_MS);
      if (!down && connection.client.status === 'ready') await withDeadline(connection.check(), opts.timeoutMs * 2, 'Redis Cluster check timed out').catch(open);
    }
  }
  if (connection.kind === 'cluster') void watchCluster();

  return {
    open,
    isOpen: () => down || connection.client.status !== 'ready',
    stop(): void {
      stopped = true;
    },
  };
}

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import { projectRoot } from '../paths.js';
import { createMemoryStore } from './memoryStore.js';
import type { HitResult, RateLimitStore } from './windows.js';

const SCRIPT = readFileSync(path.join(projectRoot, 'src', 'ratelimit', 'hit.lua'), 'utf8');

type RawResult = [HitResult['outcome'], number, number, number, number];

/**
 * Counters and bans in Redis, shared by every instance. If Redis cannot answer within
 * `timeoutMs`, this instance falls back to its own counters (limits then hold per
 * instance), logs it once, and goes back to Redis as soon as it answers again.
 */
export function createRedisStore(url: string, log: FastifyBaseLogger, opts: { prefix: string; timeoutMs?: number }): RateLimitStore {
  const timeoutMs = opts.timeoutMs ?? 500;
  const redis = new Redis(url, {
    enableOfflineQueue: false, // fail at once while disconnected instead of queueing requests
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    lazyConnect: false,
  });
  redis.on('error', () => {}); // connection errors surface as failed hits, handled below
  redis.defineCommand('rateLimitHit', { numberOfKeys: 0, lua: SCRIPT });
  const fallback = createMemoryStore();
  let degraded = false;
  // Back to shared limits as soon as the connection is, even on an instance with no traffic.
  redis.on('ready', () => {
    if (degraded) {
      degraded = false;
      log.info('Redis is back: rate limits are shared again');
    }
  });

  return {
    async hit(subject, quota, ban) {
      try {
        const [outcome, minuteCount, dayCount, now, banTtl] = (await (redis as unknown as {
          rateLimitHit(...args: (string | number)[]): Promise<RawResult>;
        }).rateLimitHit(opts.prefix + subject, quota.perMinute, quota.perDay, ban.after, ban.seconds)) as RawResult;
        if (degraded) {
          degraded = false;
          log.info('Redis is back: rate limits are shared again');
        }
        return { outcome, minuteCount, dayCount, now, banTtl };
      } catch (err) {
        if (!degraded) {
          degraded = true;
          log.warn({ err: (err as Error).message }, 'Redis unavailable: rate limits fall back to this instance');
        }
        return fallback.hitSync(subject, quota, ban);
      }
    },
    mode: () => (degraded || redis.status !== 'ready' ? 'local-fallback' : 'shared'),
    async close() {
      redis.disconnect();
    },
  };
}

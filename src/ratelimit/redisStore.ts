import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { FastifyBaseLogger } from 'fastify';
import { systemClock, type Clock } from '../clock.js';
import { projectRoot } from '../paths.js';
import { createMemoryStore } from './memoryStore.js';
import type { HitResult, RateLimitStore } from './store.js';
import { DAY, MINUTE, windowEnd } from './windows.js';

const SCRIPT = readFileSync(path.join(projectRoot, 'src', 'ratelimit', 'hit.lua'), 'utf8');

type RawResult = [HitResult['outcome'], number, number, number, number, number];

/** Requests reserved in Redis by this instance and not yet used, for one subject in one window. */
interface Reservation {
  left: number;
  minuteCount: number;
  dayCount: number;
  /** When the reserving window ends, in Unix seconds and in ms (a second early, as windows are counted in whole seconds). */
  windowEnd: number;
  expiresAtMs: number;
}

/**
 * Counters and bans in Redis, shared by every instance. Windows follow the instances'
 * clocks (keep them NTP-synchronised). If Redis cannot answer within `timeoutMs`, this
 * instance falls back to its own counters (limits then hold per instance), logs it once,
 * and goes back to Redis as soon as it answers again.
 */
export function createRedisStore(
  url: string,
  log: FastifyBaseLogger,
  opts: { prefix: string; timeoutMs?: number; batch?: number; clock?: Clock },
): RateLimitStore {
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.timeoutMs ?? 500;
  const batch = opts.batch ?? 100;
  const reservations = new LRUCache<string, Reservation>({ max: 10_000 });
  const redis = new Redis(url, {
    enableOfflineQueue: false, // fail at once while disconnected instead of queueing requests
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    lazyConnect: false,
    // Hits of concurrent requests issued in the same tick go to Redis as one pipeline: one write, one read.
    enableAutoPipelining: true,
  });
  redis.on('error', () => {}); // connection errors surface as failed hits, handled below
  redis.defineCommand('rateLimitHit', { numberOfKeys: 0, lua: SCRIPT });
  const fallback = createMemoryStore({ clock });
  let degraded = false;
  // Back to shared limits as soon as the connection is, even on an instance with no traffic.
  redis.on('ready', () => {
    if (degraded) {
      degraded = false;
      log.info('Redis is back: rate limits are shared again');
    }
  });

  /** Keeps `left` reserved requests for this subject, adding to any left from the same window. */
  function reserve(subject: string, hit: HitResult, left: number): HitResult {
    const ends = Math.min(windowEnd(hit.now, MINUTE), windowEnd(hit.now, DAY));
    const current = reservations.get(subject);
    const kept = current && current.windowEnd === ends ? current.left : 0;
    reservations.set(subject, {
      left: kept + left,
      minuteCount: hit.minuteCount,
      dayCount: hit.dayCount,
      windowEnd: ends,
      expiresAtMs: (ends - 1) * 1000,
    });
    // Counted as if the reserved requests came after this one.
    const unused = kept + left;
    return { ...hit, minuteCount: hit.minuteCount - unused, dayCount: hit.dayCount - unused };
  }

  function useReservation(r: Reservation): HitResult {
    r.left--;
    return {
      outcome: 'allowed',
      minuteCount: r.minuteCount - r.left,
      dayCount: r.dayCount - r.left,
      now: Math.floor(clock() / 1000),
      banTtl: 0,
    };
  }

  return {
    async hit(subject, quota, ban) {
      const reserved = reservations.get(subject);
      if (reserved && reserved.left > 0 && clock() < reserved.expiresAtMs) return useReservation(reserved);
      try {
        const [outcome, minuteCount, dayCount, now, banTtl, granted] = (await (redis as unknown as {
          rateLimitHit(...args: (string | number)[]): Promise<RawResult>;
        }).rateLimitHit(opts.prefix + subject, quota.perMinute, quota.perDay, ban.after, ban.seconds, batch, Math.floor(clock() / 1000))) as RawResult;
        if (degraded) {
          degraded = false;
          log.info('Redis is back: rate limits are shared again');
        }
        if (granted > 1) return reserve(subject, { outcome, minuteCount, dayCount, now, banTtl }, granted - 1);
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

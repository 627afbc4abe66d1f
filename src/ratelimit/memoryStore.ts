import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import type { BanPolicy, HitResult, Quota, RateLimitStore } from './store.js';
import { DAY, MINUTE } from './windows.js';

/** A subject's counts in the windows containing `now` (Unix seconds). */
export interface WindowCounts {
  now: number;
  minuteCount: number;
  dayCount: number;
}

export interface MemoryStore extends RateLimitStore {
  hitSync(subject: string, quota: Quota, ban: BanPolicy): HitResult;
  /** Starts a subject's current windows from these counts (from Redis, before an outage). */
  seed(subject: string, counts: WindowCounts): void;
  /** The subject's counts in the current windows. */
  peek(subject: string): WindowCounts;
}

/**
 * Counters in this process: exact for one instance. The same algorithm as the Redis
 * script, so a fallback from Redis keeps the same behaviour per instance.
 */
export function createMemoryStore(opts: { maxSubjects?: number; clock?: Clock } = {}): MemoryStore {
  const clock = opts.clock ?? systemClock;
  // Each value expires with its window, so memory stays bounded by the number of active subjects.
  const counters = new LRUCache<string, number>({ max: (opts.maxSubjects ?? 50_000) * 5, ttlAutopurge: false });
  const bans = new LRUCache<string, number>({ max: opts.maxSubjects ?? 50_000 });
  const keys = (subject: string, now: number) => ({
    minute: `${subject}:m:${Math.floor(now / MINUTE)}`,
    day: `${subject}:d:${Math.floor(now / DAY)}`,
    refused: `${subject}:r:${Math.floor(now / MINUTE)}`,
    firstRefusal: `${subject}:f:${Math.floor(now / MINUTE)}`,
  });

  function incr(key: string, ttlSeconds: number): number {
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n, { ttl: ttlSeconds * 1000 });
    return n;
  }

  function peek(subject: string): WindowCounts {
    const now = Math.floor(clock() / 1000);
    const k = keys(subject, now);
    return { now, minuteCount: counters.get(k.minute) ?? 0, dayCount: counters.get(k.day) ?? 0 };
  }

  function hitSync(subject: string, quota: Quota, ban: BanPolicy): HitResult {
    const nowMs = clock();
    const now = Math.floor(nowMs / 1000);
    const k = keys(subject, now);
    let minuteCount = counters.get(k.minute) ?? 0;
    let dayCount = counters.get(k.day) ?? 0;
    const bannedUntil = bans.get(subject) ?? 0;
    if (bannedUntil > now) return { outcome: 'banned', minuteCount, dayCount, now, banTtl: bannedUntil - now };
    if (minuteCount < quota.perMinute && dayCount < quota.perDay) {
      minuteCount = incr(k.minute, 2 * MINUTE);
      dayCount = incr(k.day, 2 * DAY);
      return { outcome: 'allowed', minuteCount, dayCount, now, banTtl: 0 };
    }
    const first = counters.get(k.firstRefusal);
    if (first === undefined) counters.set(k.firstRefusal, nowMs, { ttl: 2 * MINUTE * 1000 });
    if (first === undefined || nowMs - first < ban.graceMs) return { outcome: 'limited', minuteCount, dayCount, now, banTtl: 0 };
    const rejected = incr(k.refused, 2 * MINUTE);
    if (rejected > ban.after) {
      bans.set(subject, now + ban.seconds);
      return { outcome: 'ban-started', minuteCount, dayCount, now, banTtl: ban.seconds };
    }
    return { outcome: 'limited', minuteCount, dayCount, now, banTtl: 0 };
  }

  return {
    hitSync,
    peek,
    seed(subject, counts) {
      const k = keys(subject, counts.now);
      counters.set(k.minute, counts.minuteCount, { ttl: 2 * MINUTE * 1000 });
      counters.set(k.day, counts.dayCount, { ttl: 2 * DAY * 1000 });
    },
    hit: hitSync,
    ready: async () => {},
    mode: () => 'local',
    async close() {},
  };
}

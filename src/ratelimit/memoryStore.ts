import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import type { BanPolicy, HitResult, Quota, RateLimitStore } from './store.js';
import { DAY, MINUTE } from './windows.js';

/**
 * Counters in this process: exact for one instance. The same algorithm as the Redis
 * script, so a fallback from Redis keeps the same behaviour per instance.
 */
export function createMemoryStore(opts: { maxSubjects?: number; clock?: Clock } = {}): RateLimitStore & {
  hitSync(subject: string, quota: Quota, ban: BanPolicy): HitResult;
} {
  const clock = opts.clock ?? systemClock;
  const nowSeconds = () => Math.floor(clock() / 1000);
  // Each value expires with its window, so memory stays bounded by the number of active subjects.
  const counters = new LRUCache<string, number>({ max: (opts.maxSubjects ?? 50_000) * 4, ttlAutopurge: false });
  const bans = new LRUCache<string, number>({ max: opts.maxSubjects ?? 50_000 });

  function incr(key: string, ttlSeconds: number): number {
    const n = (counters.get(key) ?? 0) + 1;
    counters.set(key, n, { ttl: ttlSeconds * 1000 });
    return n;
  }

  function hitSync(subject: string, quota: Quota, ban: BanPolicy): HitResult {
    const now = nowSeconds();
    const mKey = `${subject}:m:${Math.floor(now / MINUTE)}`;
    const dKey = `${subject}:d:${Math.floor(now / DAY)}`;
    let minuteCount = counters.get(mKey) ?? 0;
    let dayCount = counters.get(dKey) ?? 0;
    const bannedUntil = bans.get(subject) ?? 0;
    if (bannedUntil > now) return { outcome: 'banned', minuteCount, dayCount, now, banTtl: bannedUntil - now };
    if (minuteCount < quota.perMinute && dayCount < quota.perDay) {
      minuteCount = incr(mKey, 2 * MINUTE);
      dayCount = incr(dKey, 2 * DAY);
      return { outcome: 'allowed', minuteCount, dayCount, now, banTtl: 0 };
    }
    const rejected = incr(`${subject}:r:${Math.floor(now / MINUTE)}`, 2 * MINUTE);
    if (rejected > ban.after) {
      bans.set(subject, now + ban.seconds);
      return { outcome: 'ban-started', minuteCount, dayCount, now, banTtl: ban.seconds };
    }
    return { outcome: 'limited', minuteCount, dayCount, now, banTtl: 0 };
  }

  return {
    hitSync,
    async hit(subject, quota, ban) {
      return hitSync(subject, quota, ban);
    },
    mode: () => 'local',
    async close() {},
  };
}

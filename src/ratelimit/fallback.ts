import type { Clock } from '../clock.js';
import { createMemoryStore } from './memoryStore.js';
import type { RedisConnection } from './redisConnection.js';
import { luaScript, redisKeys } from './redisHit.js';
import { DAY, MINUTE, type BanPolicy, type HitResult, type Quota, type WindowCounts } from './store.js';

type WithFlush = RedisConnection['client'] & { rateLimitFlush(key: string, delta: number, floor: number, ttl: number): Promise<number> };

const sameWindow = (a: number, b: number, length: number) => Math.floor(a / length) === Math.floor(b / length);

/**
 * Counting in this process while Redis cannot be asked: each subject starts from the last
 * counts Redis gave for it, and once Redis answers again, what this instance admitted on its
 * own is added to Redis's counters (flush.lua: kept even if Redis came back empty).
 */
export function createFallback(connection: RedisConnection, opts: { prefix: string; clock: Clock; onAdmitted(): void }) {
  const redis = connection.client as WithFlush;
  redis.defineCommand('rateLimitFlush', { numberOfKeys: 1, lua: luaScript('flush.lua') });
  const local = createMemoryStore(opts.clock);
  /** Each subject's counts when this instance fell back for it: what it admitted since is the difference. */
  const outage = new Map<string, WindowCounts>();

  return {
    /** Redis's counts for a subject: where its local count starts if Redis fails. */
    remember(subject: string, counts: WindowCounts): void {
      if (!outage.has(subject)) local.seed(subject, counts);
    },

    hit(subject: string, quota: Quota, ban: BanPolicy): HitResult {
      if (!outage.has(subject)) outage.set(subject, local.peek(subject));
      const result = local.hit(subject, quota, ban);
      if (result.outcome === 'allowed') opts.onAdmitted();
      return result;
    },

    /** A subject's counts in this process (while Redis cannot be asked). */
    peek: (subject: string): WindowCounts => local.peek(subject),

    /** Redis answered a request after all, late, that was counted here: it must not be handed back twice. */
    countedLate(subject: string, granted: number): void {
      const start = outage.get(subject);
      if (!start || granted <= 0) return;
      start.minuteCount += granted;
      start.dayCount += granted;
    },

    /** Adds to Redis what this instance admitted on its own, in the windows still current. */
    async reconcile(): Promise<void> {
      const flushes: Promise<number>[] = [];
      for (const [subject, start] of outage) {
        const current = local.peek(subject);
        const k = redisKeys(opts.prefix, subject, opts.clock());
        const minuteDelta = current.minuteCount - (sameWindow(current.now, start.now, MINUTE) ? start.minuteCount : 0);
        const dayDelta = current.dayCount - (sameWindow(current.now, start.now, DAY) ? start.dayCount : 0);
        if (minuteDelta > 0) flushes.push(redis.rateLimitFlush(k.minute, minuteDelta, current.minuteCount, 2 * MINUTE));
        if (dayDelta > 0) flushes.push(redis.rateLimitFlush(k.day, dayDelta, current.dayCount, 2 * DAY));
      }
      await Promise.all(flushes);
      outage.clear();
    },
  };
}

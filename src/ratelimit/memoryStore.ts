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
 * Everything counted for one subject, in one record: a hit is one lookup and no new
 * strings. Each count belongs to the window its index names; a count of an earlier
 * window reads as 0, so nothing needs to expire.
 */
interface Subject {
  minute: number;
  minuteCount: number;
  day: number;
  dayCount: number;
  /** The minute of the refusals below. */
  refusalMinute: number;
  /** Refusals after the grace, toward a ban. */
  refused: number;
  /** Unix ms of the minute's first refusal (0: none yet). */
  firstRefusalMs: number;
  /** Unix seconds at which a ban ends (0: none). */
  bannedUntil: number;
}

const newSubject = (): Subject => ({ minute: 0, minuteCount: 0, day: 0, dayCount: 0, refusalMinute: 0, refused: 0, firstRefusalMs: 0, bannedUntil: 0 });

/** Moves a record to the windows containing `now`, dropping counts of windows that ended. */
function roll(s: Subject, now: number): void {
  const minute = Math.floor(now / MINUTE);
  const day = Math.floor(now / DAY);
  if (s.minute !== minute) {
    s.minute = minute;
    s.minuteCount = 0;
  }
  if (s.day !== day) {
    s.day = day;
    s.dayCount = 0;
  }
  if (s.refusalMinute !== minute) {
    s.refusalMinute = minute;
    s.refused = 0;
    s.firstRefusalMs = 0;
  }
}

/**
 * Counters in this process: exact for one instance. The same algorithm as the Redis
 * script (hit.lua), so a fallback from Redis keeps the same behaviour per instance.
 */
export function createMemoryStore(opts: { maxSubjects?: number; clock?: Clock } = {}): MemoryStore {
  const clock = opts.clock ?? systemClock;
  // Bounded by the number of recently active subjects; the least recent is forgotten first.
  const subjects = new LRUCache<string, Subject>({ max: opts.maxSubjects ?? 50_000 });

  function record(subject: string, now: number): Subject {
    let s = subjects.get(subject);
    if (!s) {
      s = newSubject();
      subjects.set(subject, s);
    }
    roll(s, now);
    return s;
  }

  function peek(subject: string): WindowCounts {
    const now = Math.floor(clock() / 1000);
    const s = subjects.peek(subject);
    if (!s) return { now, minuteCount: 0, dayCount: 0 };
    roll(s, now);
    return { now, minuteCount: s.minuteCount, dayCount: s.dayCount };
  }

  function hitSync(subject: string, quota: Quota, ban: BanPolicy): HitResult {
    const nowMs = clock();
    const now = Math.floor(nowMs / 1000);
    const s = record(subject, now);
    if (s.bannedUntil > now) return { outcome: 'banned', minuteCount: s.minuteCount, dayCount: s.dayCount, now, banTtl: s.bannedUntil - now };
    if (s.minuteCount < quota.perMinute && s.dayCount < quota.perDay) {
      s.minuteCount += 1;
      s.dayCount += 1;
      return { outcome: 'allowed', minuteCount: s.minuteCount, dayCount: s.dayCount, now, banTtl: 0 };
    }
    // Refused requests are not counted against the quotas, only toward a ban, from the grace on.
    const limited: HitResult = { outcome: 'limited', minuteCount: s.minuteCount, dayCount: s.dayCount, now, banTtl: 0 };
    if (s.firstRefusalMs === 0) {
      s.firstRefusalMs = nowMs;
      return limited;
    }
    if (nowMs - s.firstRefusalMs < ban.graceMs) return limited;
    s.refused += 1;
    if (s.refused > ban.after) {
      s.bannedUntil = now + ban.seconds;
      return { ...limited, outcome: 'ban-started', banTtl: ban.seconds };
    }
    return limited;
  }

  return {
    hitSync,
    peek,
    seed(subject, counts) {
      const s = record(subject, counts.now);
      s.minuteCount = counts.minuteCount;
      s.dayCount = counts.dayCount;
    },
    hit: hitSync,
    ready: async () => {},
    mode: () => 'local',
    async close() {},
  };
}

import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import { DAY, MINUTE, type BanPolicy, type HitResult, type Quota, type WindowCounts } from './store.js';

/** Everything counted for one subject; a count of a window that ended reads as 0, so nothing expires. */
interface Subject {
  minute: number;
  minuteCount: number;
  day: number;
  dayCount: number;
  /** Refusals after the grace toward a ban, and the minute's first refusal (Unix ms, 0: none yet). */
  refused: number;
  firstRefusalMs: number;
  /** Unix seconds at which a ban ends (0: none). */
  bannedUntil: number;
}

/** Moves a record to the windows containing `now`, dropping counts of windows that ended. */
function roll(s: Subject, now: number): Subject {
  const minute = Math.floor(now / MINUTE);
  const day = Math.floor(now / DAY);
  if (s.minute !== minute) Object.assign(s, { minute, minuteCount: 0, refused: 0, firstRefusalMs: 0 });
  if (s.day !== day) Object.assign(s, { day, dayCount: 0 });
  return s;
}

/** Counters in this process: exact for one instance, and the same algorithm as the Redis script (hit.lua). */
export function createMemoryStore(clock: Clock) {
  // Bounded by the number of recently active subjects; the least recent is forgotten first.
  const subjects = new LRUCache<string, Subject>({ max: 50_000 });

  function record(subject: string, now: number): Subject {
    let s = subjects.get(subject);
    if (!s) subjects.set(subject, (s = { minute: 0, minuteCount: 0, day: 0, dayCount: 0, refused: 0, firstRefusalMs: 0, bannedUntil: 0 }));
    return roll(s, now);
  }

  return {
    hit(subject: string, quota: Quota, ban: BanPolicy): HitResult {
      const nowMs = clock();
      const now = Math.floor(nowMs / 1000);
      const s = record(subject, now);
      const result = (outcome: HitResult['outcome'], banTtl = 0): HitResult => ({ outcome, minuteCount: s.minuteCount, dayCount: s.dayCount, now, banTtl });
      if (s.bannedUntil > now) return result('banned', s.bannedUntil - now);
      if (s.minuteCount < quota.perMinute && s.dayCount < quota.perDay) {
        s.minuteCount += 1;
        s.dayCount += 1;
        return result('allowed');
      }
      // Refused requests are not counted against the quotas, only toward a ban, from the grace on.
      if (s.firstRefusalMs === 0) s.firstRefusalMs = nowMs;
      else if (nowMs - s.firstRefusalMs >= ban.graceMs && ++s.refused > ban.after) {
        s.bannedUntil = now + ban.seconds;
        return result('ban-started', ban.seconds);
      }
      return result('limited');
    },
    peek(subject: string): WindowCounts {
      const now = Math.floor(clock() / 1000);
      const s = subjects.peek(subject);
      return s ? { now, minuteCount: roll(s, now).minuteCount, dayCount: s.dayCount } : { now, minuteCount: 0, dayCount: 0 };
    },
    /** Sets a subject's counts in the windows containing `counts.now` (Redis's, for a fallback). */
    seed(subject: string, counts: WindowCounts): void {
      Object.assign(record(subject, counts.now), { minuteCount: counts.minuteCount, dayCount: counts.dayCount });
    },
    mode: () => 'local' as const,
    async close() {},
  };
}

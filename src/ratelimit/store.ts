import type { Quota } from '../configParts/quota.js';

/** What a rate-limit store counts against (its type lives beside config.ts, which reads it), and what it answers. */
export type { Quota };

export interface BanPolicy {
  /** More refused requests than this within one clock minute starts a ban. */
  after: number;
  seconds: number;
  /** Refusals count toward a ban only from this long after the minute's first: a burst is refused, not banned. */
  graceMs: number;
}

/** A subject's counts in the windows containing `now` (Unix seconds). */
export interface WindowCounts {
  now: number;
  minuteCount: number;
  dayCount: number;
}

/** What a store answers for one request. Counts are after this request (an admitted one is counted). */
export interface HitResult extends WindowCounts {
  outcome: 'allowed' | 'limited' | 'banned' | 'ban-started';
  /** Seconds left of the ban, when banned. */
  banTtl: number;
}

export interface RateLimitStore {
  /** Counts a request of `subject` against both windows and the ban; at once when it can (in-process counts, a Redis reservation). */
  hit(subject: string, quota: Quota, ban: BanPolicy): HitResult | Promise<HitResult>;
  /** A subject's counts as they stand, counting nothing (for the rate-limit fields of an answer that is not counted). */
  peek(subject: string): WindowCounts | Promise<WindowCounts>;
  /** 'shared' when counters live in Redis, 'local' when in this process (by choice or as a fallback). */
  mode(): 'shared' | 'local' | 'local-fallback';
  close(): Promise<void>;
}

/** Fixed windows aligned to UTC: the minute starts at second 0, the day at 00:00 UTC. */
export const MINUTE = 60;
export const DAY = 86_400;

/** Unix seconds at which the window of `length` seconds containing `now` ends. */
export const windowEnd = (now: number, length: number) => (Math.floor(now / length) + 1) * length;

/** What a rate-limit store counts against, and what it answers. */

export interface Quota {
  perMinute: number;
  perDay: number;
}

export interface BanPolicy {
  /** More rejected requests than this within one clock minute starts a ban. */
  after: number;
  seconds: number;
  /**
   * Refusals count toward a ban only from this long after the window's first refusal: a
   * burst sent at once is refused, not banned; a caller that keeps sending after it could
   * have seen a 429 is.
   */
  graceMs: number;
}

/** What a store answers for one request. Counts are after this request (an admitted one is counted). */
export interface HitResult {
  outcome: 'allowed' | 'limited' | 'banned' | 'ban-started';
  minuteCount: number;
  dayCount: number;
  /** Unix seconds at which the request was counted. */
  now: number;
  /** Seconds left of the ban, when banned. */
  banTtl: number;
}

export interface RateLimitStore {
  /**
   * Counts a request of `subject` against both windows and the ban, atomically. Answers
   * at once when it can (in-process counters, a Redis reservation): most requests then
   * cost no promise.
   */
  hit(subject: string, quota: Quota, ban: BanPolicy): HitResult | Promise<HitResult>;
  /** Resolves when the store can count (Redis connected), or rejects; the service may start without it. */
  ready(): Promise<void>;
  /** 'shared' when counters live in Redis, 'local' when in this process (by choice or as a fallback). */
  mode(): 'shared' | 'local' | 'local-fallback';
  close(): Promise<void>;
}

import { errors, type ApiError } from '../errors/apiError.js';
import type { HitResult, Quota } from './store.js';
import { DAY, MINUTE, windowEnd } from './windows.js';

interface WindowState {
  name: 'minute' | 'day';
  limit: number;
  remaining: number;
  /** Unix seconds when the window ends. */
  reset: number;
}

export interface RateLimitDecision {
  headers: Record<string, string>;
  /** The binding window's limit and what is left of it (the X-RateLimit-* values). */
  limit: number;
  remaining: number;
  /** For a refused request: the 429 to throw. */
  error?: ApiError;
}

/** Turns a store's answer into response headers and, for a refused request, the 429 to throw. */
export function rateLimitDecision(hit: HitResult, quota: Quota): RateLimitDecision {
  const minute: WindowState = { name: 'minute', limit: quota.perMinute, remaining: Math.max(0, quota.perMinute - hit.minuteCount), reset: windowEnd(hit.now, MINUTE) };
  const day: WindowState = { name: 'day', limit: quota.perDay, remaining: Math.max(0, quota.perDay - hit.dayCount), reset: windowEnd(hit.now, DAY) };
  // The X-RateLimit-* trio describes the window closest to exhausted; when both are, the one that ends last.
  const binding = minute.remaining === 0 && day.remaining === 0 ? day : day.remaining < minute.remaining ? day : minute;
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(binding.limit),
    'x-ratelimit-remaining': String(binding.remaining),
    'x-ratelimit-reset': String(binding.reset),
    'ratelimit-policy': `"minute";q=${minute.limit};w=${MINUTE}, "day";q=${day.limit};w=${DAY}`,
    ratelimit: `"minute";r=${minute.remaining};t=${minute.reset - hit.now}, "day";r=${day.remaining};t=${day.reset - hit.now}`,
  };
  const decision: RateLimitDecision = { headers, limit: binding.limit, remaining: binding.remaining };
  if (hit.outcome === 'allowed') return decision;
  if (hit.outcome === 'limited') {
    const retryAfter = binding.reset - hit.now;
    headers['retry-after'] = String(retryAfter);
    const per = binding.name === 'minute' ? 'minute' : 'day';
    decision.error = errors.rate_limited(`Rate limit of ${binding.limit} requests per ${per} exceeded. Retry in ${retryAfter} s.`);
    return decision;
  }
  headers['retry-after'] = String(hit.banTtl);
  decision.error = errors.temporarily_banned(`Too many requests after being rate limited: banned for ${hit.banTtl} s.`);
  return decision;
}

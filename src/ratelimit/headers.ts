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

/** Turns a store's answer into response headers and, for a refused request, the 429 to throw. */
export function rateLimitDecision(hit: HitResult, quota: Quota): { headers: Record<string, string>; error?: ApiError } {
  const windows: WindowState[] = [
    { name: 'minute', limit: quota.perMinute, remaining: Math.max(0, quota.perMinute - hit.minuteCount), reset: windowEnd(hit.now, MINUTE) },
    { name: 'day', limit: quota.perDay, remaining: Math.max(0, quota.perDay - hit.dayCount), reset: windowEnd(hit.now, DAY) },
  ];
  const [minute, day] = windows as [WindowState, WindowState];
  // The X-RateLimit-* trio describes the window closest to exhausted; when both are, the one that ends last.
  const binding =
    minute.remaining === 0 && day.remaining === 0 ? day : day.remaining < minute.remaining ? day : minute;
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(binding.limit),
    'x-ratelimit-remaining': String(binding.remaining),
    'x-ratelimit-reset': String(binding.reset),
    'ratelimit-policy': windows.map((w) => `"${w.name}";q=${w.limit};w=${w.name === 'minute' ? MINUTE : DAY}`).join(', '),
    ratelimit: windows.map((w) => `"${w.name}";r=${w.remaining};t=${w.reset - hit.now}`).join(', '),
  };
  if (hit.outcome === 'allowed') return { headers };
  if (hit.outcome === 'limited') {
    const retryAfter = binding.reset - hit.now;
    headers['retry-after'] = String(retryAfter);
    const per = binding.name === 'minute' ? 'minute' : 'day';
    return { headers, error: errors.rate_limited(`Rate limit of ${binding.limit} requests per ${per} exceeded. Retry in ${retryAfter} s.`) };
  }
  headers['retry-after'] = String(hit.banTtl);
  return {
    headers,
    error: errors.temporarily_banned(`Too many requests after being rate limited: banned for ${hit.banTtl} s.`),
  };
}

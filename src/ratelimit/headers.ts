import type { FastifyReply } from 'fastify';
import { errors, type ApiError } from '../errors/apiError.js';
import { DAY, MINUTE, windowEnd, type HitResult, type Quota } from './store.js';

/**
 * Writes a store's answer as response headers: X-RateLimit-* for the window closest to
 * exhausted (when both are, the one that ends last), the IETF RateLimit-Policy and RateLimit
 * fields for both. Returns the binding window's limit and what is left of it, the fields, and
 * the 429 to answer for a refused request.
 */
export function applyRateLimit(reply: FastifyReply, hit: HitResult, quota: Quota): { limit: number; remaining: number; fields: Record<string, string>; refusal?: ApiError } {
  const minuteRemaining = Math.max(0, quota.perMinute - hit.minuteCount);
  const dayRemaining = Math.max(0, quota.perDay - hit.dayCount);
  const dayBinds = (minuteRemaining === 0 && dayRemaining === 0) || dayRemaining < minuteRemaining;
  const [limit, remaining, reset] = dayBinds ? [quota.perDay, dayRemaining, windowEnd(hit.now, DAY)] : [quota.perMinute, minuteRemaining, windowEnd(hit.now, MINUTE)];
  const t = (length: number) => windowEnd(hit.now, length) - hit.now;
  const fields = {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(reset),
    'ratelimit-policy': `"minute";q=${quota.perMinute};w=${MINUTE}, "day";q=${quota.perDay};w=${DAY}`,
    ratelimit: `"minute";r=${minuteRemaining};t=${t(MINUTE)}, "day";r=${dayRemaining};t=${t(DAY)}`,
  };
  reply.headers(fields);
  if (hit.outcome === 'allowed') return { limit, remaining, fields };
  const retryAfter = hit.outcome === 'limited' ? reset - hit.now : hit.banTtl;
  reply.header('retry-after', String(retryAfter));
  const refusal =
    hit.outcome === 'limited'
      ? errors.rate_limited(`Rate limit of ${limit} requests per ${dayBinds ? 'day' : 'minute'} exceeded. Retry in ${retryAfter} s.`)
      : errors.temporarily_banned(`Too many requests after being rate limited: banned for ${retryAfter} s.`);
  return { limit, remaining, fields, refusal };
}

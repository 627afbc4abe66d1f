import type { FastifyReply } from 'fastify';
import { errors, type ApiError } from '../errors/apiError.js';
import type { HitResult, Quota } from './store.js';
import { DAY, MINUTE, windowEnd } from './windows.js';

/** The parts of a quota's fields that never change: made once per quota. */
interface QuotaText {
  policy: string;
  minuteLimit: string;
  dayLimit: string;
}

const quotaTexts = new WeakMap<Quota, QuotaText>();
function textOf(quota: Quota): QuotaText {
  let text = quotaTexts.get(quota);
  if (!text) {
    text = {
      policy: `"minute";q=${quota.perMinute};w=${MINUTE}, "day";q=${quota.perDay};w=${DAY}`,
      minuteLimit: String(quota.perMinute),
      dayLimit: String(quota.perDay),
    };
    quotaTexts.set(quota, text);
  }
  return text;
}

/** The parts that change once a second: made once per second. */
interface SecondText {
  now: number;
  minuteReset: number;
  dayReset: number;
  minuteResetText: string;
  dayResetText: string;
  /** `;t=` of each window: seconds until it resets. */
  minuteT: string;
  dayT: string;
}

let second: SecondText = textAt(0);
function textAt(now: number): SecondText {
  const minuteReset = windowEnd(now, MINUTE);
  const dayReset = windowEnd(now, DAY);
  return {
    now,
    minuteReset,
    dayReset,
    minuteResetText: String(minuteReset),
    dayResetText: String(dayReset),
    minuteT: `;t=${minuteReset - now}, "day";r=`,
    dayT: `;t=${dayReset - now}`,
  };
}

/** The binding window's limit and what is left of it: for the request's log line and metrics. */
export interface Binding {
  limit: number;
  remaining: number;
}

/**
 * Writes a store's answer as response headers: X-RateLimit-* for the window closest to
 * exhausted (when both are, the one that ends last), the IETF RateLimit-Policy and RateLimit
 * fields for both. Fills `binding`; returns the 429 to answer for a refused request.
 */
export function applyRateLimit(reply: FastifyReply, hit: HitResult, quota: Quota, binding: Binding): ApiError | undefined {
  if (second.now !== hit.now) second = textAt(hit.now);
  const text = textOf(quota);
  const minuteRemaining = Math.max(0, quota.perMinute - hit.minuteCount);
  const dayRemaining = Math.max(0, quota.perDay - hit.dayCount);
  const dayBinds = (minuteRemaining === 0 && dayRemaining === 0) || dayRemaining < minuteRemaining;
  binding.limit = dayBinds ? quota.perDay : quota.perMinute;
  binding.remaining = dayBinds ? dayRemaining : minuteRemaining;
  reply.header('x-ratelimit-limit', dayBinds ? text.dayLimit : text.minuteLimit);
  reply.header('x-ratelimit-remaining', String(binding.remaining));
  reply.header('x-ratelimit-reset', dayBinds ? second.dayResetText : second.minuteResetText);
  reply.header('ratelimit-policy', text.policy);
  reply.header('ratelimit', `"minute";r=${minuteRemaining}${second.minuteT}${dayRemaining}${second.dayT}`);
  if (hit.outcome === 'allowed') return undefined;
  if (hit.outcome === 'limited') {
    const retryAfter = (dayBinds ? second.dayReset : second.minuteReset) - hit.now;
    reply.header('retry-after', String(retryAfter));
    return errors.rate_limited(`Rate limit of ${binding.limit} requests per ${dayBinds ? 'day' : 'minute'} exceeded. Retry in ${retryAfter} s.`);
  }
  reply.header('retry-after', String(hit.banTtl));
  return errors.temporarily_banned(`Too many requests after being rate limited: banned for ${hit.banTtl} s.`);
}

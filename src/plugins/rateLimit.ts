import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { parseAuthorization } from '../auth/apiKey.js';
import { identify } from '../auth/identify.js';
import type { KeyVerifier } from '../auth/keyVerifier.js';
import { decide } from '../ratelimit/decision.js';
import type { BanPolicy, Quota, RateLimitStore } from '../ratelimit/windows.js';
import type { Plan } from '../repositories/apiKeys.js';

export interface RateLimitOptions {
  store: RateLimitStore;
  verifier: KeyVerifier;
  plans: Record<Exclude<Plan, 'enterprise'>, Quota>;
  anonymous: Quota;
  ban: BanPolicy;
}

const EXEMPT = new Set(['/healthz', '/readyz']);

/**
 * Identifies the caller and counts the request, first thing for every request but the
 * probes: by API key (the plan's quota) or, without a valid key, by client IP. The
 * X-RateLimit-* and RateLimit fields go on every response, errors included.
 */
export function registerRateLimit(app: FastifyInstance, opts: RateLimitOptions): void {
  function subjectOf(request: FastifyRequest): { subject: string; quota: Quota } {
    const key = request.apiKey;
    if (!key) return { subject: `ip:${request.ip}`, quota: opts.anonymous };
    const quota =
      key.plan === 'enterprise' ? { perMinute: key.perMinute!, perDay: key.perDay! } : opts.plans[key.plan];
    return { subject: `key:${key.id}`, quota };
  }

  async function count(request: FastifyRequest) {
    const { subject, quota } = subjectOf(request);
    const hit = await opts.store.hit(subject, quota, opts.ban);
    if (hit.outcome === 'ban-started') request.log.warn({ subject, seconds: hit.banTtl }, 'rate-limit ban started');
    return decide(hit, quota);
  }

  // Addresses whose quota for requests without a valid key is spent (or that are banned):
  // until when, and when a key they sent was last looked up. Keys they send that this
  // instance does not already know are looked up at most once a second, so a flood of
  // made-up keys costs the database next to nothing, while a real key from the same
  // address (a shared NAT) is still verified after a retry or two.
  const refused = new LRUCache<string, { until: number; lookedUpAt: number }>({ max: 50_000 });

  function mustNotLookUp(request: FastifyRequest): boolean {
    const state = refused.get(request.ip);
    const now = Date.now();
    if (state === undefined || state.until <= now) return false;
    const parsed = parseAuthorization(request.headers.authorization);
    if (parsed.kind !== 'key' || opts.verifier.answersAtOnce(parsed.key)) return false;
    if (now - state.lookedUpAt >= 1000) {
      state.lookedUpAt = now;
      return false;
    }
    return true;
  }

  app.addHook('onRequest', async (request, reply) => {
    if (EXEMPT.has(request.url.split('?', 1)[0]!)) return;
    let identifyError: unknown;
    if (mustNotLookUp(request)) {
      request.credentials = 'invalid';
    } else {
      try {
        await identify(request, opts.verifier);
      } catch (err) {
        identifyError = err; // e.g. database down: still counted (by IP), then answered 503
      }
    }
    const { headers, error } = await count(request);
    reply.headers(headers);
    if (error) {
      if (!request.apiKey) {
        const until = Date.now() + Number(headers['retry-after'] ?? 0) * 1000;
        refused.set(request.ip, { until, lookedUpAt: refused.get(request.ip)?.lookedUpAt ?? 0 });
      }
      throw error;
    }
    if (identifyError) throw identifyError;
  });
}

import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { Counter } from 'prom-client';
import type { components } from '../../generated/openapi.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { applyRateLimit } from './headers.js';
import { rememberLimits } from './inFlight.js';
import { createMemoryStore } from './memoryStore.js';
import { createRedisStore } from './redisStore.js';
import type { HitResult, RateLimitStore, WindowCounts } from './store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the limiter decided, for the log line and the metrics (plan `anonymous`: counted by client address). */
    rateLimit?: { outcome: 'allowed' | 'limited' | 'banned'; plan: components['schemas']['Plan'] | 'anonymous'; limit: number; remaining: number; mode: ReturnType<RateLimitStore['mode']> };
  }
  interface FastifyInstance {
    /** Rate-limit counters: in Redis when REDIS_URL is set (shared by instances), else in this process. */
    rateLimitStore: RateLimitStore;
    /**
     * Counts a request after identification: by the key's account (the plan's quota, shared
     * by all the account's keys) or, without a valid key, by client address. Puts the X-RateLimit-* and RateLimit fields on the
     * response (errors included) and calls `done` with the 429 to answer, if any.
     */
    countRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void;
    /**
     * Puts the rate-limit fields of a request the service does not count (a CORS preflight) on
     * its answer: the caller's counts as they stand (without a key, its address's), unchanged.
     */
    showLimits(request: FastifyRequest, reply: FastifyReply): void | Promise<void>;
  }
}

export default fp(
  async function rateLimitPlugin(app: FastifyInstance, opts: { config: Config; clock: Clock }) {
    const { redisUrl, redisPrefix, redisTimeoutMs, rateLimits } = opts.config;
    const fallbackAdmitted = new Counter({
      name: 'animal_store_ratelimit_fallback_admitted_total',
      help: 'Requests admitted by this instance counting alone while the Redis rate limiter fell back to local counters.',
      registers: [app.metricsRegistry],
    });
    const store: RateLimitStore = redisUrl
      ? await createRedisStore(redisUrl, app.log, {
          prefix: redisPrefix,
          batch: rateLimits.redisBatch,
          clock: opts.clock,
          timeoutMs: redisTimeoutMs,
          onFallbackAdmitted: () => fallbackAdmitted.inc(),
        })
      : createMemoryStore(opts.clock);
    app.decorate('rateLimitStore', store);
    app.addHook('onClose', () => store.close());
    app.decorateRequest('rateLimit', undefined);

    /** Whom a request counts against, and the quota: the key's account, or without one the client address. */
    const callerOf = (request: FastifyRequest) => {
      const key = request.apiKey;
      const subject = key ? `account:${key.accountId}` : `ip:${request.ip}`;
      const quota = !key ? rateLimits.anonymous : key.plan === 'enterprise' ? { perMinute: key.perMinute!, perDay: key.perDay! } : rateLimits.plans[key.plan];
      return { key, subject, quota };
    };

    app.decorate('countRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const { key, subject, quota } = callerOf(request);
      // Puts the decision on the response (and the request, for logs and metrics); calls done with the 429, if any.
      const decide = (hit: HitResult) => {
        if (hit.outcome === 'ban-started') request.log.warn({ subject, seconds: hit.banTtl }, 'rate-limit ban started');
        const { limit, remaining, fields, refusal } = applyRateLimit(reply, hit, quota);
        // For a 408 Node's parser may answer in its place while the body arrives (http/clientError.ts).
        rememberLimits(request.raw, fields);
        const outcome = hit.outcome === 'ban-started' ? 'banned' : hit.outcome;
        request.rateLimit = { outcome, plan: key?.plan ?? 'anonymous', limit, remaining, mode: store.mode() };
        done(refusal);
      };
      const hit = store.hit(subject, quota, rateLimits.ban);
      if (hit instanceof Promise) hit.then(decide, done);
      else decide(hit);
    });

    app.decorate('showLimits', (request: FastifyRequest, reply: FastifyReply): void | Promise<void> => {
      const { subject, quota } = callerOf(request);
      const show = (counts: WindowCounts) => void applyRateLimit(reply, { ...counts, outcome: 'allowed', banTtl: 0 }, quota);
      const counts = store.peek(subject);
      return counts instanceof Promise ? counts.then(show) : show(counts);
    });
  },
  { name: 'rate-limit', dependencies: ['authentication', 'metrics'] },
);

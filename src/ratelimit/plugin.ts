import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Plan } from '../auth/apiKeys.js';
import type { Clock } from '../clock.js';
import { rateLimitDecision } from './headers.js';
import type { BanPolicy, HitResult, Quota, RateLimitStore } from './store.js';

export interface RateLimitOptions {
  plans: Record<Exclude<Plan, 'enterprise'>, Quota>;
  anonymous: Quota;
  ban: BanPolicy;
  clock: Clock;
}

/** What the limiter decided for one request: for its log line and the metrics. */
export interface RateLimitNote {
  outcome: 'allowed' | 'limited' | 'banned';
  /** The key's plan, or `anonymous` for a request counted by client address. */
  plan: Plan | 'anonymous';
  limit: number;
  remaining: number;
  mode: ReturnType<RateLimitStore['mode']>;
}

declare module 'fastify' {
  interface FastifyRequest {
    rateLimit?: RateLimitNote;
  }
}

/**
 * Counts every request of the scope it is registered in, after authentication has said
 * who is calling: by API key (the plan's quota) or, without a valid key, by client
 * address. The X-RateLimit-* and RateLimit fields go on every response, errors included.
 */
export default fp(
  async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
    app.decorateRequest('rateLimit', undefined);
    function subjectOf(request: FastifyRequest): { subject: string; quota: Quota; plan: RateLimitNote['plan'] } {
      const key = request.apiKey;
      if (!key) return { subject: `ip:${request.ip}`, quota: opts.anonymous, plan: 'anonymous' };
      const quota = key.plan === 'enterprise' ? { perMinute: key.perMinute!, perDay: key.perDay! } : opts.plans[key.plan];
      return { subject: `key:${key.id}`, quota, plan: key.plan };
    }

    /** Puts the decision on the response (and the request, for logs and metrics); returns the 429 to answer, if any. */
    function apply(request: FastifyRequest, reply: FastifyReply, hit: HitResult, { subject, quota, plan }: ReturnType<typeof subjectOf>) {
      if (hit.outcome === 'ban-started') request.log.warn({ subject, seconds: hit.banTtl }, 'rate-limit ban started');
      const { headers, error, limit, remaining } = rateLimitDecision(hit, quota);
      const outcome = hit.outcome === 'ban-started' ? 'banned' : hit.outcome;
      request.rateLimit = { outcome, plan, limit, remaining, mode: app.rateLimitStore.mode() };
      reply.headers(headers);
      if (error && !request.apiKey) app.keyLookupThrottle.refuse(request.ip, opts.clock() + Number(headers['retry-after'] ?? 0) * 1000);
      return error;
    }

    // Callback style: the store answers most requests at once, and then no promise is made.
    app.addHook('onRequest', (request, reply, done) => {
      const counted = subjectOf(request);
      const hit = app.rateLimitStore.hit(counted.subject, counted.quota, opts.ban);
      if (!(hit instanceof Promise)) return done(apply(request, reply, hit, counted));
      hit.then((answered) => done(apply(request, reply, answered, counted)), done);
    });
  },
  { name: 'rate-limit', dependencies: ['authentication', 'rate-limit-store'] },
);

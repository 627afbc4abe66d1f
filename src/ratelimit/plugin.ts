import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiKeyIdentity, Plan } from '../auth/apiKeys.js';
import type { Clock } from '../clock.js';
import { applyRateLimit } from './headers.js';
import type { BanPolicy, HitResult, Quota } from './store.js';

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
  mode: 'shared' | 'local' | 'local-fallback';
}

declare module 'fastify' {
  interface FastifyRequest {
    rateLimit?: RateLimitNote;
  }
  interface FastifyInstance {
    /**
     * Counts a request after identification: by API key (the plan's quota) or, without a
     * valid key, by client address. Puts the X-RateLimit-* and RateLimit fields on the
     * response (errors included) and calls `done` with the 429 to answer, if any.
     */
    countRequest(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void;
  }
}

/** An enterprise key's own quota, made once per identity (identities are cached), not per request. */
const enterpriseQuotas = new WeakMap<ApiKeyIdentity, Quota>();
function enterpriseQuota(key: ApiKeyIdentity): Quota {
  let quota = enterpriseQuotas.get(key);
  if (!quota) enterpriseQuotas.set(key, (quota = { perMinute: key.perMinute!, perDay: key.perDay! }));
  return quota;
}

export default fp(
  async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
    app.decorateRequest('rateLimit', undefined);
    const store = app.rateLimitStore;

    /** Puts the decision on the response (and the request, for logs and metrics); calls done with the 429, if any. */
    function decide(request: FastifyRequest, reply: FastifyReply, hit: HitResult, subject: string, quota: Quota, done: HookHandlerDoneFunction) {
      if (hit.outcome === 'ban-started') request.log.warn({ subject, seconds: hit.banTtl }, 'rate-limit ban started');
      const key = request.apiKey;
      const note: RateLimitNote = {
        outcome: hit.outcome === 'ban-started' ? 'banned' : hit.outcome,
        plan: key ? key.plan : 'anonymous',
        limit: 0,
        remaining: 0,
        mode: store.mode(),
      };
      request.rateLimit = note;
      done(applyRateLimit(reply, hit, quota, note));
    }

    app.decorate('countRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const key = request.apiKey;
      const subject = key ? `key:${key.id}` : `ip:${request.ip}`;
      const quota = !key ? opts.anonymous : key.plan === 'enterprise' ? enterpriseQuota(key) : opts.plans[key.plan];
      // The store answers most requests at once, and then no promise is made.
      const hit = store.hit(subject, quota, opts.ban);
      if (!(hit instanceof Promise)) return decide(request, reply, hit, subject, quota, done);
      hit.then((answered) => decide(request, reply, answered, subject, quota, done), done);
    });
  },
  { name: 'rate-limit', dependencies: ['authentication', 'rate-limit-store'] },
);

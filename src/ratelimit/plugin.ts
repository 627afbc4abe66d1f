import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Plan } from '../auth/apiKeys.js';
import type { Clock } from '../clock.js';
import { rateLimitDecision } from './headers.js';
import type { BanPolicy, Quota } from './store.js';

export interface RateLimitOptions {
  plans: Record<Exclude<Plan, 'enterprise'>, Quota>;
  anonymous: Quota;
  ban: BanPolicy;
  clock: Clock;
}

/**
 * Counts every request of the scope it is registered in, after authentication has said
 * who is calling: by API key (the plan's quota) or, without a valid key, by client
 * address. The X-RateLimit-* and RateLimit fields go on every response, errors included.
 */
export default fp(
  async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
    function subjectOf(request: FastifyRequest): { subject: string; quota: Quota } {
      const key = request.apiKey;
      if (!key) return { subject: `ip:${request.ip}`, quota: opts.anonymous };
      const quota = key.plan === 'enterprise' ? { perMinute: key.perMinute!, perDay: key.perDay! } : opts.plans[key.plan];
      return { subject: `key:${key.id}`, quota };
    }

    app.addHook('onRequest', async (request, reply) => {
      const { subject, quota } = subjectOf(request);
      const hit = await app.rateLimitStore.hit(subject, quota, opts.ban);
      if (hit.outcome === 'ban-started') request.log.warn({ subject, seconds: hit.banTtl }, 'rate-limit ban started');
      const { headers, error } = rateLimitDecision(hit, quota);
      reply.headers(headers);
      if (!error) return;
      if (!request.apiKey) app.keyLookupThrottle.refuse(request.ip, opts.clock() + Number(headers['retry-after'] ?? 0) * 1000);
      throw error;
    });
  },
  { name: 'rate-limit', dependencies: ['authentication', 'rate-limit-store'] },
);

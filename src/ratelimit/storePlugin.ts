import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { createMemoryStore } from './memoryStore.js';
import { createRedisStore } from './redisStore.js';
import type { RateLimitStore } from './store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Rate-limit counters: in Redis when REDIS_URL is set (shared by instances), else in this process. */
    rateLimitStore: RateLimitStore;
  }
}

export default fp(
  async function rateLimitStorePlugin(app: FastifyInstance, opts: { config: Config; clock: Clock }) {
    const { redisUrl, redisPrefix, rateLimits } = opts.config;
    const store = redisUrl
      ? createRedisStore(redisUrl, app.log, { prefix: redisPrefix, batch: rateLimits.redisBatch, clock: opts.clock, timeoutMs: opts.config.redisTimeoutMs })
      : createMemoryStore({ clock: opts.clock });
    app.decorate('rateLimitStore', store);
    await store.ready().catch((err: Error) => app.log.warn({ err: err.message }, 'starting with per-instance rate limits until Redis answers'));
    app.addHook('onClose', () => store.close());
  },
  { name: 'rate-limit-store' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log this route's requests only when they fail (health probes). */
    quietWhenOk?: boolean;
  }
}

/**
 * One log line per request, written when the answer is sent, instead of Fastify's two
 * (received and completed): half the logging work on the hot path. Headers are never
 * logged, so neither is a key; the line carries the request id like every other line
 * of the request.
 */
export default fp(
  async function requestLogPlugin(app: FastifyInstance) {
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode < 400 && request.routeOptions.config.quietWhenOk) return;
      request.log.info(
        { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 },
        'request',
      );
    });
  },
  { name: 'request-log' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log this route's requests only when they fail (health probes). */
    quietWhenOk?: boolean;
    /** The openapi.yaml operation a route serves (set by api/routes.ts). */
    operationId?: string;
  }
}

/**
 * One log line per request, written when the answer is sent, instead of Fastify's two
 * (received and completed; disableRequestLogging in app.ts). Through the request's logger,
 * so it carries the request id as `reqId` like every other line of the request. Never a
 * header, so never a key. At debug level it adds the limiter's decision.
 */
export default fp(
  async function requestLogPlugin(app: FastifyInstance) {
    const log = app.log as Logger;
    if (!log.isLevelEnabled('info')) return;
    const debug = log.isLevelEnabled('debug');
    app.addHook('onResponse', (request, reply, done) => {
      const { config } = request.routeOptions;
      const status = reply.statusCode;
      if (status >= 400 || !config.quietWhenOk) {
        const limit = request.rateLimit;
        request.log.info(
          {
            op: config.operationId,
            method: request.method,
            url: request.url,
            status,
            ms: Math.round(reply.elapsedTime * 100) / 100,
            ip: request.ip,
            keyId: request.apiKey?.id,
            accountId: request.apiKey?.accountId,
            plan: limit?.plan,
            rateLimit: limit?.outcome,
            limiter: debug && limit ? { remaining: limit.remaining, limit: limit.limit, mode: limit.mode } : undefined,
          },
          'request',
        );
      }
      done();
    });
  },
  { name: 'request-log' },
);

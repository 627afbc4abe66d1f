import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { timesRequests, withRequestTimings, type RequestTimings } from './requestTimings.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log this route's requests only when they fail (health probes). */
    quietWhenOk?: boolean;
    /** The openapi.yaml operation a route serves (set by api/routes.ts). */
    operationId?: string;
  }
  interface FastifyRequest {
    /** Database time of this request; only kept at debug level. */
    timings?: RequestTimings;
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** What an operator needs to find and judge one request; never a header, so never a key. */
function requestFields(request: FastifyRequest, reply: FastifyReply, operationId: string | undefined) {
  const limit = request.rateLimit;
  return {
    op: operationId,
    method: request.method,
    url: request.url,
    status: reply.statusCode,
    ms: round(reply.elapsedTime),
    ip: request.ip,
    keyId: request.apiKey?.id,
    plan: limit?.plan,
    rateLimit: limit?.outcome,
  };
}

/**
 * One log line per request, written when the answer is sent, instead of Fastify's two
 * (received and completed). Each line carries the request id (`reqId`) like every other
 * line of the request. At debug level it adds the limiter's decision and the request's
 * database time.
 */
export default fp(
  async function requestLogPlugin(app: FastifyInstance) {
    const debug = timesRequests(app.log.level);
    app.decorateRequest('timings', undefined);
    if (debug) {
      // Everything after this hook (hooks, handler, queries) runs inside the request's timings.
      app.addHook('onRequest', (request, _reply, done) => {
        request.timings = withRequestTimings(done);
      });
    }
    app.addHook('onResponse', (request, reply, done) => {
      // routeOptions is built anew on each read: read it once.
      const { config } = request.routeOptions;
      if (!(reply.statusCode < 400 && config.quietWhenOk)) {
        const fields = requestFields(request, reply, config.operationId);
        if (!debug) request.log.info(fields, 'request');
        else {
          const { timings, rateLimit } = request;
          request.log.info(
            {
              ...fields,
              limiter: rateLimit && { remaining: rateLimit.remaining, limit: rateLimit.limit, mode: rateLimit.mode },
              db: timings && { queries: timings.queries, ms: round(timings.dbMs) },
            },
            'request',
          );
        }
      }
      done();
    });
  },
  { name: 'request-log' },
);

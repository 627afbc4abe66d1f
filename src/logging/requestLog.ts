import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Logger } from 'pino';
import { requestLineWriter } from './requestLine.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Log this route's requests only when they fail (health probes). */
    quietWhenOk?: boolean;
    /** The openapi.yaml operation a route serves (set by api/routes.ts). */
    operationId?: string;
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/**
 * One log line per request, written when the answer is sent, instead of Fastify's two
 * (received and completed). It carries the request id as `reqId`, as every other line of
 * the request (logging/lazyChildLogger.ts), without a child logger: at info level it is
 * written whole by requestLine.ts. Never a header, so never a key. At debug level it adds
 * the limiter's decision.
 */
export default fp(
  async function requestLogPlugin(app: FastifyInstance) {
    const log = app.log as Logger;
    const debug = log.isLevelEnabled('debug');
    if (!log.isLevelEnabled('info')) return;
    const writeLine = requestLineWriter(log);
    app.observeResponses((request, reply, config) => {
      const status = reply.statusCode;
      if (status < 400 && config.quietWhenOk) return;
      const limit = request.rateLimit;
      const fields = {
        reqId: request.id,
        op: config.operationId,
        method: request.method,
        url: request.url,
        status,
        ms: round(reply.elapsedTime),
        ip: request.ip,
        keyId: request.apiKey?.id,
        plan: limit?.plan,
        rateLimit: limit?.outcome,
      };
      if (!debug) return writeLine(fields);
      log.info(
        {
          ...fields,
          limiter: limit && { remaining: limit.remaining, limit: limit.limit, mode: limit.mode },
        },
        'request',
      );
    });
  },
  { name: 'request-log', dependencies: ['response-observers'] },
);

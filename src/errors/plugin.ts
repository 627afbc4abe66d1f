import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { errors, serviceUnavailable } from './apiError.js';
import { sendError } from './render.js';
import { toApiError } from './toApiError.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Logs a database outage at most once per period, with the count of requests it failed since. */
    logOutage(request: FastifyRequest, err: Error): void;
  }
}

/** At most one outage line (with its stack) per period; the requests in between are counted in the next one. */
const OUTAGE_LOG_PERIOD_MS = 10_000;

function outageLogger() {
  let lastAt = -Infinity;
  let since = 0;
  return (request: FastifyRequest, err: Error) => {
    since++;
    const now = Date.now();
    if (now - lastAt < OUTAGE_LOG_PERIOD_MS) return;
    request.log.warn({ err, requests: since }, 'database unavailable: answering 503');
    lastAt = now;
    since = 0;
  };
}

/** Answers any failure while serving a request: logs what deserves it, sends the Error body. */
export function handleError(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const { error, log } = toApiError(err);
  if (request.raw.aborted || reply.raw.destroyed) {
    // The client went away (an aborted upload, say): nothing wrong here, whatever the error says.
    request.log.info({ err: err.message }, 'client closed the connection');
    return sendError(request, reply, error);
  }
  if (log === 'error') request.log.error({ err }, 'unhandled error');
  else if (log === 'warn') request.log.warn({ code: error.code, err: err.message }, error.message);
  else if (log === 'outage') request.server.logOutage(request, err);
  return sendError(request, reply, error);
}

/** The 404 of any scope: registered at the root and again inside /v1, where the API's hooks apply. */
export function notFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(request, reply, errors.not_found(`Route ${request.method} ${request.url.split('?', 1)[0]} not found.`));
}

/**
 * The one error path: every handler's and hook's failure and unknown routes. Router errors (bad URLs, over-long parameters) come
 * through Fastify's `frameworkErrors` option, which app.ts points at handleError.
 */
export default fp(
  async function errorsPlugin(app: FastifyInstance) {
    app.decorate('logOutage', outageLogger());
    app.setErrorHandler(handleError);
    app.setNotFoundHandler(notFound);

  },
  { name: 'errors' },
);

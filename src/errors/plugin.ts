import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { errors, serviceUnavailable } from './apiError.js';
import { sendError } from './render.js';
import { toApiError } from './toApiError.js';

/** Answers any failure while serving a request: logs what deserves it, sends the Error body. */
export function handleError(err: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const { error, log } = toApiError(err);
  if (log === 'error') request.log.error({ err }, 'unhandled error');
  else if (log === 'warn') request.log.warn({ code: error.code, err: err.message }, error.message);
  return sendError(request, reply, error);
}

/** The 404 of any scope: registered at the root and again inside /v1, where the API's hooks apply. */
export function notFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(request, reply, errors.not_found(`Route ${request.method} ${request.url.split('?', 1)[0]} not found.`));
}

/**
 * The one error path: every handler's and hook's failure, unknown routes, and requests
 * arriving while the server closes. Router errors (bad URLs, over-long parameters) come
 * through Fastify's `frameworkErrors` option, which app.ts points at handleError.
 */
export default fp(
  async function errorsPlugin(app: FastifyInstance) {
    app.setErrorHandler(handleError);
    app.setNotFoundHandler(notFound);

    // Instead of Fastify's own 503 body while closing (return503OnClosing is off).
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    app.addHook('onRequest', async (_request, reply) => {
      if (!closing) return;
      reply.header('connection', 'close');
      throw serviceUnavailable();
    });
  },
  { name: 'errors' },
);

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { systemClock, type Clock } from '../clock.js';
import { FAULT_LOG_INTERVAL_MS } from '../limits.js';
import { createFaultLog, type FaultLog } from '../logging/faultLog.js';
import { errors } from './apiError.js';
import { sendError } from './render.js';
import { toApiError } from './toApiError.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Faults that repeat with the traffic (outages, refused connections): one line per interval, with a count. */
    faults: FaultLog;
  }
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
  else if (log) {
    const code = (err as { code?: unknown }).code;
    request.server.faults.report(log.fault, { reqId: request.id, err: err.message, ...(typeof code === 'string' && { code }) });
  }
  return sendError(request, reply, error);
}

/** The 404 of any scope: registered at the root and again inside /v1, where the API's hooks apply. */
export function notFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(request, reply, errors.not_found(`Route ${request.method} ${request.url.split('?', 1)[0]} not found.`));
}

/**
 * The one error path: every handler's and hook's failure and unknown routes. Router errors (bad URLs, over-long parameters) come
 * through Fastify's `frameworkErrors` option, which app.ts points at handleError.
 * `clock`: the time the fault log counts its intervals by.
 */
export default fp(
  async function errorsPlugin(app: FastifyInstance, opts: { clock?: Clock }) {
    const faults = createFaultLog(app.log, opts.clock ?? systemClock, FAULT_LOG_INTERVAL_MS);
    app.decorate('faults', faults);
    app.addHook('onClose', async () => faults.flush());
    app.setErrorHandler(handleError);
    app.setNotFoundHandler(notFound);
  },
  { name: 'errors' },
);

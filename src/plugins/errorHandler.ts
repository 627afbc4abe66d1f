import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { ApiError, serviceUnavailable } from '../http/errors.js';
import { BODY_LIMIT } from './jsonBody.js';

/** Fastify's own errors that a client causes, with the Error code each becomes. */
const FASTIFY_CLIENT_ERRORS: Record<string, { status: number; code: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json' },
};

const MESSAGES: Record<number, string> = {
  413: `Request body is larger than ${BODY_LIMIT} bytes.`,
  415: 'Content-Type must be application/json (UTF-8).',
};

function send(reply: FastifyReply, status: number, code: string, message: string, headers: Record<string, string> = {}) {
  return reply.code(status).headers(headers).type('application/json; charset=utf-8').send({ code, message, status });
}

/** The one error handler: every failure leaves as the spec's Error body, 5xx without internals. */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) {
      if (err.statusCode >= 500) request.log.warn({ code: err.code }, err.message);
      return send(reply, err.statusCode, err.code, err.message, err.headers);
    }
    if (err.validation) return send(reply, 400, 'validation_failed', err.message);
    const known = err.code ? FASTIFY_CLIENT_ERRORS[err.code] : undefined;
    if (known) {
      const message = MESSAGES[known.status] ?? err.message;
      return send(reply, known.status, known.code, message);
    }
    if (isDatabaseUnavailable(err)) {
      request.log.warn({ err }, 'database unavailable');
      const e = serviceUnavailable();
      return send(reply, e.statusCode, e.code, e.message, e.headers);
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return send(reply, err.statusCode, 'bad_request', err.message);
    }
    request.log.error({ err }, 'unhandled error');
    return send(reply, 500, 'internal_error', 'Internal server error.');
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, 404, 'not_found', `Route ${request.method} ${request.url.split('?')[0]} not found.`),
  );
}

import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { closeOrLinger, endLingering } from './lingeringClose.js';
import type { ApiError } from './apiError.js';

export const NOSNIFF = 'nosniff';

/** Headers every response carries (http/arrival.ts); errors set them themselves, as router errors skip the hooks. */
export function baseHeaders(requestId: string): Record<string, string> {
  return { 'x-request-id': requestId, 'x-content-type-options': NOSNIFF };
}

/** The one shape of every non-2xx answer: the Error body, its headers, never cached. */
export function errorResponse(err: ApiError, requestId: string) {
  return {
    statusCode: err.statusCode,
    headers: {
      ...baseHeaders(requestId),
      'cache-control': 'no-store',
      'content-type': 'application/json; charset=utf-8',
      ...err.headers,
    },
    body: { code: err.code, message: err.message, status: err.statusCode },
  };
}

/** Sends an error through Fastify (hooks such as the rate-limit headers still apply). */
export function sendError(request: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  const { statusCode, headers, body } = errorResponse(err, request.id);
  closeOrLinger(request, reply);
  return reply.code(statusCode).headers(headers).send(body);
}

/** Writes an error straight to a socket Node's HTTP parser gave up on, then closes it (lingering, bounded); `extra`: the rate-limit fields, when known. */
export function writeErrorToSocket(socket: Duplex, err: ApiError, extra: Record<string, string> = {}): void {
  const { statusCode, headers, body } = errorResponse(err, randomUUID());
  const payload = JSON.stringify(body);
  const lines = Object.entries({ ...headers, ...extra, connection: 'close', 'content-length': String(Buffer.byteLength(payload)) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  endLingering(socket, `HTTP/1.1 ${statusCode} ${err.message}\r\n${lines}\r\n${payload}`);
}

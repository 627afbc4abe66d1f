import type { Socket } from 'node:net';
import { errors } from '../errors/apiError.js';
import { isLingering } from '../errors/lingeringClose.js';
import { writeErrorToSocket } from '../errors/render.js';
import { limitsOfIncomplete } from '../ratelimit/inFlight.js';

/** Requests Node's HTTP parser rejects before Fastify sees them (oversized headers, bad request lines, timeouts). */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // A request already answered (its body still arriving, errors/lingeringClose.ts) gets no second answer.
  if (err.code === 'ECONNRESET' || !socket.writable || isLingering(socket)) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? errors.headers_too_large('Request headers are too large.')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? errors.request_timeout('The request took too long to arrive.')
        : errors.bad_request('The request is not valid HTTP.');
  // A body that did not arrive in time belongs to a request already counted: its fields are known.
  // Headers too large, too slow or not HTTP: nothing was read, so no caller, and none.
  writeErrorToSocket(socket, error, err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? limitsOfIncomplete(socket) : undefined);
}

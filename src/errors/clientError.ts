import type { Socket } from 'node:net';
import { errors } from './apiError.js';
import { writeErrorToSocket } from './render.js';

/** Requests Node's HTTP parser rejects before Fastify sees them (oversized headers, bad request lines, timeouts). */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // A response already begun on this socket cannot be replaced: just close it.
  const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable || started) {
    socket.destroy();
    return;
  }
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? errors.headers_too_large('Request headers are too large.')
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? errors.request_timeout('The request took too long to arrive.')
        : errors.bad_request('The request is not valid HTTP.');
  writeErrorToSocket(socket, error);
}

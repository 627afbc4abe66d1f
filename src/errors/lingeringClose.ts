import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LINGER_BYTES, LINGER_MS } from '../limits.js';

/** Sockets whose request was answered while its body is still arriving (their answer is out: nothing more may be written). */
const lingering = new WeakSet<Socket>();
export const isLingering = (socket: Socket) => lingering.has(socket);

/**
 * Reads and drops the rest of a body after its answer, at most LINGER_BYTES of it (counted
 * from the error on), and closes LINGER_MS after the answer unless the body has ended:
 * nginx's lingering close. Closing with the body unread makes the kernel reset the
 * connection, and the reset can discard the answer before the client has read it (Node's
 * fetch reported EPIPE instead of the 413): past LINGER_BYTES reading stops, but the close
 * still waits for LINGER_MS. A body that ends within the bounds leaves the connection open
 * for the next request, as HTTP keep-alive has it.
 */
function linger(req: IncomingMessage, answer: ServerResponse): void {
  const socket = req.socket;
  lingering.add(socket);
  let read = 0;
  let timer: NodeJS.Timeout | undefined;
  const done = () => {
    clearTimeout(timer);
    lingering.delete(socket);
  };
  // Read from now on: a request nobody reads when its answer is sent has its body dropped by Node out of sight, uncounted.
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > LINGER_BYTES) req.pause();
  });
  req.once('end', done);
  socket.once('close', done);
  answer.once('finish', () => {
    if (lingering.has(socket)) timer = setTimeout(() => socket.destroy(), LINGER_MS);
  });
  req.resume();
}

/**
 * On the error path (render.ts): a request answered before its body was read. An
 * unauthenticated one earns no reading, and a client waiting for `100 Continue` has sent
 * nothing: `Connection: close`, and Node closes once the answer is written. Any other keeps
 * its connection while the rest is read and dropped, within bounds (without Fastify's own
 * `Connection: close` on a body error, which would make Node close at once).
 */
export function closeOrLinger(request: FastifyRequest, reply: FastifyReply): void {
  const { headers } = request;
  // A request without a body (a GET) can be answered before Node's parser has marked it complete.
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (!hasBody || request.raw.complete || lingering.has(request.raw.socket)) return;
  if (request.apiKey === undefined || headers.expect?.toLowerCase() === '100-continue') {
    reply.header('connection', 'close');
    return;
  }
  reply.removeHeader('connection');
  linger(request.raw, reply.raw);
}

/** An answer written straight to a socket Node's parser gave up on (http/clientError.ts): FIN now, closed within LINGER_MS. */
export function endLingering(socket: Duplex, answer: string): void {
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
}

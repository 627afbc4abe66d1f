import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BODY_LIMIT, LINGER_MS } from '../limits.js';

/** Sockets whose request was answered while its body is still arriving (their answer is out: nothing more may be written). */
const lingering = new WeakSet<Socket>();
export const isLingering = (socket: Socket) => lingering.has(socket);

/**
 * Keeps the connection of an answered request open for LINGER_MS while the rest of its body
 * arrives, reading and dropping at most `readUpTo` bytes of it (nginx's lingering close).
 * Closing with the body unread makes the kernel reset the connection, and the reset can
 * discard the answer before the client has read it (Node's fetch reported EPIPE instead of
 * the 413). A body that ends within `readUpTo` leaves the connection open for the next request,
 * as HTTP keep-alive has it; past it reading stops (what has arrived stays in the kernel's
 * buffers, costing no CPU), the answer is followed by a FIN, so the client knows the
 * connection is done, and the close still waits for LINGER_MS.
 */
function linger(req: IncomingMessage, answer: ServerResponse, readUpTo: number): void {
  const socket = req.socket;
  lingering.add(socket);
  let read = 0;
  let answered = false;
  let timer: NodeJS.Timeout | undefined;
  const done = () => {
    clearTimeout(timer);
    lingering.delete(socket);
    // A keep-alive connection lingers once per early answer: its listener goes with each.
    socket.off('close', done);
  };
  const stopped = () => read > readUpTo;
  // Read from now on: a request nobody reads when its answer is sent has its body dropped by Node out of sight, uncounted.
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (!stopped()) return;
    req.pause();
    if (answered) socket.end();
  });
  req.once('end', done);
  socket.on('close', done);
  answer.once('finish', () => {
    answered = true;
    if (!lingering.has(socket)) return;
    if (stopped() || readUpTo === 0) socket.end();
    timer = setTimeout(() => socket.destroy(), LINGER_MS);
  });
  req.resume();
}

/**
 * On the error path (render.ts): a request answered before its body was read. An
 * unauthenticated one earns no reading, and a client waiting for `100 Continue` has sent
 * nothing: `Connection: close`, and Node closes once the answer is written. A body declared
 * over the limit is not read either (it could not end within the bound): the connection
 * lingers unread. Any other keeps its connection while at most BODY_LIMIT of the rest is read
 * and dropped, no more than serving it would have cost (without Fastify's own
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
  linger(request.raw, reply.raw, Number(headers['content-length']) > BODY_LIMIT ? 0 : BODY_LIMIT);
}

/** An answer written straight to a socket Node's parser gave up on (http/clientError.ts): FIN now, closed within LINGER_MS. */
export function endLingering(socket: Duplex, answer: string): void {
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
}

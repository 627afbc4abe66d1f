import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { LINGER_BYTES, LINGER_MS } from '../limits.js';

const lingering = new WeakSet<Socket>();

/**
 * Closes the connection of a request answered while its body is still arriving, without
 * losing the answer: nginx's lingering close. Closing at once leaves the rest of the body
 * unread in the kernel, which then resets the connection, and a reset can discard the answer
 * before the client reads it (Node's fetch reported EPIPE instead of the 413). So the answer
 * goes out with `Connection: close` and a FIN, the rest of the body is read and dropped, and
 * the connection closes once the body has ended, the client has closed, or LINGER_BYTES or
 * LINGER_MS are reached: a body that trickles or never ends cannot hold it.
 */
export function lingerAfterAnswer(req: IncomingMessage): void {
  const socket = req.socket;
  if (lingering.has(socket)) return;
  lingering.add(socket);
  let answered = false;
  let discarded = 0;
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded <= LINGER_BYTES) return;
    if (answered) socket.destroy();
    else req.pause(); // the answer first
  });
  const closeWhenSent = () => (socket.writableFinished ? socket.destroy() : socket.once('finish', () => socket.destroy()));
  // Node's HTTP server calls this once a response with `Connection: close` is written, to end and destroy the socket.
  socket.destroySoon = () => {
    answered = true;
    if (socket.writable) socket.end();
    if (req.complete || discarded > LINGER_BYTES) return closeWhenSent();
    req.once('end', closeWhenSent);
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
    req.resume();
  };
}

/** The same bound for an answer written straight to the socket (errors/clientError.ts): FIN now, closed within LINGER_MS. */
export function endLingering(socket: Duplex, answer: string): void {
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
}

import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The rate-limit fields of the request a connection is still receiving, for an answer Node's
 * parser makes in its place: a body that does not arrive in time is answered 408 by
 * http/clientError.ts, outside Fastify, after the request was counted. Kept per socket
 * with the request, and given only while that request is incomplete: a later request on the
 * same connection whose headers never arrive has no known caller.
 */
const counted = new WeakMap<Socket, { request: IncomingMessage; fields: Record<string, string> }>();

export function rememberLimits(request: IncomingMessage, fields: Record<string, string>): void {
  counted.set(request.socket, { request, fields });
}

/** The fields of the socket's request still arriving, if it was counted. */
export function limitsOfIncomplete(socket: Socket): Record<string, string> | undefined {
  const entry = counted.get(socket);
  return entry && !entry.request.complete ? entry.fields : undefined;
}

import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { lingerAfterAnswer } from './lingeringClose.js';

/**
 * A request answered with an error before its body was read (401 before the body, 413 on
 * its Content-Length) closes its connection after the answer, instead of the server reading
 * (and waiting for) the rest of the body to reuse the connection; the close lingers, so the
 * client can read the answer (lingeringClose.ts). On the error path only (errors/render.ts):
 * a request that succeeds has read its body.
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  const { headers } = request;
  // A request without a body (a GET) can be answered before Node's parser has marked it complete, and keeps its connection.
  const hasBody = headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
  if (!hasBody || request.raw.complete) return;
  reply.header('connection', 'close');
  lingerAfterAnswer(request.raw);
}

/**
 * A route-level preParsing hook of the operations that take a body (api/routes.ts): the
 * `100 Continue` a client asked for, sent once the request has passed authentication and
 * its quota. Elsewhere no body is wanted, and the final answer comes without one.
 */
export const continueIfExpected: preParsingHookHandler = (request, reply, payload, done) => {
  if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
  done(null, payload);
};

/** Bodies are read only once a request has passed authentication and its quota: Node would send `100 Continue` at once. */
export default fp(
  async function unreadBodiesPlugin(app: FastifyInstance) {
    app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
  },
  { name: 'unread-bodies' },
);

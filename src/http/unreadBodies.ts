import type { FastifyInstance } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import fp from 'fastify-plugin';

/**
 * Whether the request announced a body. A request without one (a GET) can be answered
 * before Node's parser has marked it complete, and must keep its connection.
 */
const hasBody = (headers: IncomingHttpHeaders) =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');

/**
 * Bodies are read only once a request has passed authentication and its quota:
 * `Expect: 100-continue` is answered only then (Node would send it at once), and a
 * request answered with an error before its body was read has its connection closed
 * after the answer instead of the server reading (and waiting for) the rest.
 */
export default fp(
  async function unreadBodiesPlugin(app: FastifyInstance) {
    app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
    app.addHook('preParsing', (request, reply, payload, done) => {
      if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
      done(null, payload);
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.statusCode >= 400 && hasBody(request.headers) && !request.raw.complete) reply.header('connection', 'close');
      done(null, payload);
    });
  },
  { name: 'unread-bodies' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Bodies are read only once a request has passed authentication and its quota:
 * `Expect: 100-continue` is answered only then (Node would send it at once), and a
 * request answered with an error before its body was read has its connection closed
 * after the answer instead of the server reading (and waiting for) the rest.
 */
export default fp(
  async function unreadBodiesPlugin(app: FastifyInstance) {
    app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
    app.addHook('preParsing', async (request, reply, payload) => {
      if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue();
      return payload;
    });
    app.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode >= 400 && !request.raw.complete) reply.header('connection', 'close');
      return payload;
    });
  },
  { name: 'unread-bodies' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { writeErrorToResponse, writeErrorToSocket } from '../errors/render.js';

/**
 * What Node's HTTP server would otherwise answer itself, with an empty body or none: an
 * `Expect` other than 100-continue (417) and `CONNECT` (Node closes the socket). Both get the
 * Error body. (A missing Host is refused in http/arrival.ts, where Fastify still handles it.)
 * `Expect: 100-continue` reaches Fastify like any request, without Node's immediate
 * `100 Continue`: it goes out once the request is admitted (lingeringClose.ts).
 */
export default fp(
  async function protocolAnswersPlugin(app: FastifyInstance) {
    app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
    app.server.on('checkExpectation', (req, res) => {
      writeErrorToResponse(res, errors.expectation_failed(`Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met; only 100-continue is supported.`));
    });
    app.server.on('connect', (_req, socket) => {
      writeErrorToSocket(socket, errors.not_implemented('CONNECT is not implemented: this is not a proxy.'));
    });
  },
  { name: 'protocol-answers' },
);

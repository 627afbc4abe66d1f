import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { writeErrorToSocket } from '../errors/render.js';

/** Requests whose `Expect` Node found it cannot meet (anything but 100-continue): arrival.ts answers them 417. */
const unmet = new WeakSet<IncomingMessage>();
export const unmetExpectation = (req: IncomingMessage) => unmet.has(req);

/**
 * What Node's HTTP server would otherwise answer itself, with an empty body or none: an
 * `Expect` other than 100-continue (417) and `CONNECT` (Node closes the socket). Both get the
 * Error body. The 417 is answered through Fastify (http/arrival.ts, with a missing Host), so
 * under /v1 it is counted and carries the rate-limit fields; Node decides which `Expect` it
 * cannot meet. `Expect: 100-continue` reaches Fastify like any request, without Node's
 * immediate `100 Continue`: it goes out once the request is admitted (lingeringClose.ts).
 */
export default fp(
  async function protocolAnswersPlugin(app: FastifyInstance) {
    app.server.on('checkContinue', (req, res) => app.server.emit('request', req, res));
    app.server.on('checkExpectation', (req, res) => {
      unmet.add(req);
      app.server.emit('request', req, res);
    });
    app.server.on('connect', (_req, socket) => {
      writeErrorToSocket(socket, errors.not_implemented('CONNECT is not implemented: this is not a proxy.'));
    });
  },
  { name: 'protocol-answers' },
);

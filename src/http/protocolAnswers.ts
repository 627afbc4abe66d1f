import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { writeErrorToSocket } from '../errors/render.js';
import { BODY_LIMIT } from '../limits.js';

/** Requests whose `Expect` Node found it cannot meet (anything but 100-continue): arrival.ts answers them 417. */
const unmet = new WeakSet<IncomingMessage>();
export const unmetExpectation = (req: IncomingMessage) => unmet.has(req);

/**
 * What Node's HTTP server would otherwise answer itself, with an empty body or none: an
 * `Expect` other than 100-continue (417) and `CONNECT` (Node closes the socket). Both get the
 * Error body. The 417 is answered through Fastify (http/arrival.ts, with a missing Host), so
 * under /v1 it is counted and carries the rate-limit fields; Node decides which `Expect` it
 * cannot meet. `Expect: 100-continue` reaches Fastify like any request, without Node's
 * immediate `100 Continue`: it goes out once the request is admitted (continueIfExpected, below).
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

/**
 * A route-level preParsing hook of the operations that take a body (api/routes.ts): the
 * `100 Continue` a client asked for, sent once the request has passed authentication and its
 * quota (the plugin above keeps Node from sending it at once), and never for a body the
 * limit refuses on its Content-Length: that gets its 413 without having been asked for.
 */
export const continueIfExpected: preParsingHookHandler = (request, reply, payload, done) => {
  const { expect, 'content-length': length } = request.headers;
  if (expect?.toLowerCase() === '100-continue' && !(Number(length) > BODY_LIMIT)) reply.raw.writeContinue();
  done(null, payload);
};

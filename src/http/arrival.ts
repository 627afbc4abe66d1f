import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { NOSNIFF } from '../errors/render.js';

const missingHost = () => errors.bad_request('The request has no Host header, which HTTP/1.1 requires.');

/**
 * First thing for every request, in one hook: an HTTP/1.1 request without a Host header is
 * refused; the headers every response carries (its request id, no MIME sniffing; errors set
 * them again, see errors/render.ts, as router errors skip the hooks).
 */
export default fp(
  async function arrivalPlugin(app: FastifyInstance) {
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id).header('x-content-type-options', NOSNIFF);
      // Node's own check answers 400 with no body (requireHostHeader is off in app.ts).
      if (request.headers.host === undefined && request.raw.httpVersionMinor === 1) return done(missingHost());
      done();
    });
  },
  { name: 'arrival' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errors } from '../errors/apiError.js';
import { NOSNIFF } from '../errors/render.js';

const missingHost = () => errors.bad_request('The request has no Host header, which HTTP/1.1 requires.');
const twoHosts = () => errors.bad_request('The request has more than one Host header.');

/** Node keeps only the first of several Host headers in `headers`; the raw list has them all (RFC 9112 §3.2: 400). */
function hostCount(rawHeaders: string[]): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') n++;
  return n;
}

/**
 * First thing for every request, in one hook: an HTTP/1.1 request without a Host header, and
 * any with two, is refused; the headers every response carries (its request id, no MIME
 * sniffing; errors set them again, see errors/render.ts, as router errors skip the hooks).
 */
export default fp(
  async function arrivalPlugin(app: FastifyInstance) {
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id).header('x-content-type-options', NOSNIFF);
      // Node's own check answers 400 with no body (requireHostHeader is off in app.ts).
      if (request.headers.host === undefined && request.raw.httpVersionMinor === 1) return done(missingHost());
      if (hostCount(request.raw.rawHeaders) > 1) return done(twoHosts());
      done();
    });
  },
  { name: 'arrival' },
);

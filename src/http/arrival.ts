import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errors, serviceUnavailable } from '../errors/apiError.js';
import { NOSNIFF } from '../errors/render.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the shutdown signal on: readiness fails and every response closes its connection. */
    readonly draining: boolean;
    /** Starts the drain: the listener keeps serving, but load balancers are told to go elsewhere. */
    startDrain(): void;
  }
}

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
 * any with two, is refused; the headers every response carries (its
 * request id, no MIME sniffing; errors set them again, see errors/render.ts, as router errors
 * skip the hooks); during the drain that starts a graceful stop (process/serve.ts),
 * `Connection: close`, so clients reconnect elsewhere while the request is still served in
 * full (and `/readyz` fails, see health/plugin.ts); once the server is closing, a 503 in the
 * Error shape instead of Fastify's own body (return503OnClosing is off).
 */
export default fp(
  async function arrivalPlugin(app: FastifyInstance) {
    let draining = false;
    let closing = false;
    app.decorate('draining', { getter: () => draining });
    app.decorate('startDrain', () => {
      draining = true;
    });
    app.addHook('preClose', async () => {
      closing = draining = true;
    });
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id).header('x-content-type-options', NOSNIFF);
      // Node's own check answers 400 with no body (requireHostHeader is off in app.ts).
      if (request.headers.host === undefined && request.raw.httpVersionMinor === 1) return done(missingHost());
      if (hostCount(request.raw.rawHeaders) > 1) return done(twoHosts());
      if (!draining) return done();
      reply.header('connection', 'close');
      done(closing ? serviceUnavailable() : undefined);
    });
  },
  { name: 'arrival' },
);

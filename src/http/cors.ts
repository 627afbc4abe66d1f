import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { CorsPolicy } from './corsPolicy.js';

export interface CorsOptions {
  origins: string[];
  /** What is allowed and exposed, per API route (corsPolicy.ts, from openapi.yaml): only these routes have CORS. */
  policy: CorsPolicy;
}

/**
 * CORS for browser apps on the listed origins (CORS_ORIGINS); off when the list is empty.
 * Registered at the root, so a preflight is answered before the API's gate: never
 * authenticated, never counted (a page sends one per URL it calls, which would use up its
 * address's anonymous quota), yet with the rate-limit fields of that quota as they stand.
 * Only the document's paths take part: elsewhere (docs, probes,
 * unknown paths) there is no CORS and no preflight, and an OPTIONS that is not a preflight
 * reaches the API like any request (405 with Allow). Bearer keys, not cookies: no credentials mode.
 */
export default fp(
  async function corsPlugin(app: FastifyInstance, opts: CorsOptions) {
    if (opts.origins.length === 0) return;
    const { policy } = opts;
    const shared: FastifyCorsOptions = {
      origin: opts.origins,
      allowedHeaders: policy.allowedHeaders,
      exposedHeaders: policy.exposedHeaders,
      maxAge: 600,
      strictPreflight: true,
    };
    // Per route: a preflight allows the methods of its path (what a 405 there lists in Allow).
    const onFor = new Map([...policy.methods].map(([route, methods]): [string, FastifyCorsOptions] => [route, { ...shared, methods }]));
    const off: FastifyCorsOptions = { origin: false };
    const isPreflight = (request: FastifyRequest) =>
      request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;
    const onOf = (request: FastifyRequest) => (request.routeOptions.url === undefined ? undefined : onFor.get(request.routeOptions.url));
    // Before the cors plugin's own hook, which answers the preflight; without a promise for other requests.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.method !== 'OPTIONS' || !isPreflight(request) || !onOf(request)) return done();
      const shown = request.server.showLimits(request, reply);
      if (shown) shown.then(() => done(), done);
      else done();
    });
    await app.register(cors, {
      delegator: (request, callback) => {
        const on = onOf(request);
        callback(null, on && (request.method !== 'OPTIONS' || isPreflight(request)) ? on : off);
      },
    });
  },
  { name: 'cors' },
);

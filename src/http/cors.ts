import cors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** What a browser app on another origin may read of a response: pagination, limits, ids, deprecation, stability. */
const EXPOSED = [
  'Link',
  'Location',
  'Retry-After',
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'Deprecation',
  'Sunset',
  'Idempotent-Replayed',
  'API-Stability',
];

export interface CorsOptions {
  origins: string[];
  /** The API's routes (the document's paths under the base path, as Fastify route URLs): only these have CORS. */
  routes: string[];
}

/**
 * CORS for browser apps on the listed origins (CORS_ORIGINS); off when the list is empty.
 * Registered at the root, so a preflight is answered before the API's gate: never
 * authenticated, never counted (a page sends one per URL it calls, which would use up its
 * address's anonymous quota), yet with the rate-limit fields of that quota as they stand. Only the document's paths take part: elsewhere (docs, probes,
 * unknown paths) there is no CORS and no preflight, and an OPTIONS that is not a preflight
 * reaches the API like any request (405 with Allow). Bearer keys, not cookies: no credentials mode.
 */
export default fp(
  async function corsPlugin(app: FastifyInstance, opts: CorsOptions) {
    if (opts.origins.length === 0) return;
    const routes = new Set(opts.routes);
    const on: FastifyCorsOptions = {
      origin: opts.origins,
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
      exposedHeaders: EXPOSED,
      maxAge: 600,
      strictPreflight: true,
    };
    const off: FastifyCorsOptions = { origin: false };
    const isPreflight = (request: FastifyRequest) =>
      request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;
    const isApi = (request: FastifyRequest) => request.routeOptions.url !== undefined && routes.has(request.routeOptions.url);
    // Before the cors plugin's own hook, which answers the preflight; without a promise for other requests.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.method !== 'OPTIONS' || !isPreflight(request) || !isApi(request)) return done();
      const shown = request.server.showLimits(request, reply);
      if (shown) shown.then(() => done(), done);
      else done();
    });
    await app.register(cors, {
      delegator: (request, callback) => {
        callback(null, isApi(request) && (request.method !== 'OPTIONS' || isPreflight(request)) ? on : off);
      },
    });
  },
  { name: 'cors' },
);

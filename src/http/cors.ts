import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/** What a browser app on another origin may read of a response: pagination, limits, ids, deprecation. */
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
];

/**
 * CORS for browser apps on the listed origins (CORS_ORIGINS); off when the list is empty.
 * Registered at the root, so a preflight is answered outside /v1: never authenticated,
 * never counted. Bearer keys, not cookies: no credentials mode.
 */
export default fp(
  async function corsPlugin(app: FastifyInstance, opts: { origins: string[] }) {
    if (opts.origins.length === 0) return;
    await app.register(cors, {
      origin: opts.origins,
      methods: ['GET', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
      exposedHeaders: EXPOSED,
      maxAge: 600,
      strictPreflight: true,
    });
  },
  { name: 'cors' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';

/**
 * OpenTelemetry traces when an OTLP endpoint is configured: a span per request and a child span
 * per SQL statement (tracing/otel.ts). Off, OpenTelemetry is not even imported: requests cost
 * exactly what they did. Registered before every other plugin, since @fastify/otel only sees the
 * routes defined after it.
 */
export default fp(
  async function tracingPlugin(app: FastifyInstance, opts: { tracing: Config['tracing'] }) {
    if (opts.tracing) await (await import('./otel.js')).startTracing(app, opts.tracing);
  },
  { name: 'tracing' },
);

import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';

/**
 * OpenTelemetry traces when an OTLP endpoint is configured: a span per request (@fastify/otel)
 * and a child span per SQL statement (@opentelemetry/instrumentation-pg), batched and sent over
 * OTLP/HTTP. Off, OpenTelemetry is not even imported: requests cost exactly what they did.
 * Registered before every other plugin, since @fastify/otel only sees the routes defined after it.
 */
export default fp(
  async function tracingPlugin(app: FastifyInstance, opts: { tracing: Config['tracing'] }) {
    if (!opts.tracing) return;
    const [{ createTracerProvider, shutdownTracerProvider }, { requestSpans }, { PgInstrumentation }] = await Promise.all([
      import('./provider.js'),
      import('./requestSpans.js'),
      import('@opentelemetry/instrumentation-pg'),
    ]);
    const provider = createTracerProvider(opts.tracing, app.log);
    await app.register(requestSpans(provider));
    // Statements outside a request (start-up, the expiry job) are not traced: each would be a trace of its own.
    const statements = new PgInstrumentation({ requireParentSpan: true });
    statements.setTracerProvider(provider);
    // pg was imported before tracing was configured: requiring it again lets the instrumentation's
    // require hook patch the loaded module in place (no loader flag needed).
    createRequire(import.meta.url)('pg');
    // Registered first, so closed last: the spans of the last requests and statements are sent.
    app.addHook('onClose', async () => {
      statements.disable();
      await shutdownTracerProvider(provider, app.log);
    });
  },
  { name: 'tracing' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import type pg from 'pg';

/** Ends a statement's span: its duration, and what failed it, if anything. */
export type SpanEnd = (ms: number, failed: boolean, error?: unknown) => void;
/** Starts the span of a statement sent on behalf of a traced request; undefined outside one. */
export type QueryTracer = (sql: string, connection: pg.Client) => SpanEnd | undefined;

declare module 'fastify' {
  interface FastifyInstance {
    /** A span per SQL statement, under its request's (called by the database plugin); undefined when tracing is off. */
    traceQuery: QueryTracer | undefined;
  }
}

/**
 * OpenTelemetry traces when an OTLP endpoint is configured: a span per request and a child
 * span per SQL statement, batched and sent over OTLP/HTTP. Off, OpenTelemetry is not even
 * imported (only type imports above): requests cost exactly what they did. Registered before
 * every other plugin, since @fastify/otel only sees the routes defined after it.
 */
export default fp(
  async function tracingPlugin(app: FastifyInstance, opts: { tracing: Config['tracing'] }) {
    if (!opts.tracing) {
      app.decorate('traceQuery', undefined);
      return;
    }
    const [{ createTracerProvider, shutdownTracerProvider }, { requestSpans }, { querySpans }] = await Promise.all([
      import('./provider.js'),
      import('./requestSpans.js'),
      import('./querySpans.js'),
    ]);
    const provider = createTracerProvider(opts.tracing, app.log);
    await app.register(requestSpans(provider));
    app.decorate('traceQuery', querySpans(provider.getTracer('animal-store')));
    // Registered first, so closed last: the spans of the last requests and statements are sent.
    app.addHook('onClose', () => shutdownTracerProvider(provider, app.log));
  },
  { name: 'tracing' },
);

import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { context, diag, DiagLogLevel, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';

/** The longest a collector that does not answer may hold the app's close. */
const FLUSH_TIMEOUT_MS = 3000;

let processWideInstalled = false;

/**
 * Traces the app (tracing/plugin.ts loads this only when tracing is on). Spans are batched
 * (BatchSpanProcessor: up to 512 per export, at most 5 s apart; OTEL_BSP_* change that) and sent
 * as OTLP/HTTP with JSON bodies to the traces endpoint (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and
 * _COMPRESSION apply). Sampling follows OTEL_TRACES_SAMPLER (by default: every trace a caller has
 * not marked unsampled). The provider is not made global, so apps sharing a process (tests) export on their own.
 */
export async function startTracing(app: FastifyInstance, tracing: NonNullable<Config['tracing']>): Promise<void> {
  if (!processWideInstalled) {
    // Installed by the first app and kept: the context manager (AsyncLocalStorage: how a statement
    // finds its request's span) and the W3C `traceparent` propagator (a caller's trace is continued).
    processWideInstalled = true;
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }
  // OpenTelemetry reports its own trouble (a collector refusing batches, spans dropped) here, silently by default.
  const warn = (message: string) => app.log.warn(`OpenTelemetry: ${message}`);
  const quiet = () => {};
  diag.setLogger({ error: warn, warn, info: quiet, debug: quiet, verbose: quiet }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const provider = new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': tracing.serviceName })),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: tracing.endpoint }))],
  });

  // The span of each request, from @fastify/otel (a plugin, nothing patched): a server span named by
  // method and route (`GET /v1/pets`), with the route's operationId (`animal_store.operation`), the
  // path without its query string and the status code. Nothing from the headers is read, so never a key.
  const requests = new FastifyOtelInstrumentation({
    // One span per request: none per hook or for the handler, so statements sit right under it.
    instrumentHooks: false,
    instrumentHandler: false,
    // A thrown error (a 404 is one) sets the span's status; no event with its stack as well.
    recordExceptions: false,
    requestHook(span, request) {
      const { url: route, config } = request.routeOptions;
      span.updateName(route ? `${request.method} ${route}` : request.method);
      if (config.operationId) span.setAttribute('animal_store.operation', config.operationId);
      span.setAttribute('url.path', request.url.split('?', 1)[0]!);
    },
  });
  requests.setTracerProvider(provider);
  await app.register(requests.plugin());

  // A child span per SQL statement. Statements outside a request (start-up, the expiry job) are not traced: each would be a trace of its own.
  const statements = new PgInstrumentation({ requireParentSpan: true });
  statements.setTracerProvider(provider);
  // pg was imported before tracing was configured: requiring it again lets the instrumentation's
  // require hook patch the loaded module in place (no loader flag needed).
  createRequire(import.meta.url)('pg');

  // Registered first, so closed last: the spans of the last requests and statements are sent, waiting
  // at most FLUSH_TIMEOUT_MS (a collector that does not answer is retried).
  app.addHook('onClose', async () => {
    statements.disable();
    const timedOut = Symbol('timed out');
    const stopped = provider.shutdown().catch((err: unknown) => app.log.warn({ err }, 'OpenTelemetry: stopping the tracer provider failed'));
    if ((await Promise.race([stopped, sleep(FLUSH_TIMEOUT_MS, timedOut, { ref: false })])) === timedOut) {
      app.log.warn({ timeoutMs: FLUSH_TIMEOUT_MS }, 'OpenTelemetry: the last spans were not sent in time');
    }
  });
}

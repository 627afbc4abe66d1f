import { setTimeout as sleep } from 'node:timers/promises';
import { context, diag, DiagLogLevel, propagation } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';

/** The longest a collector that does not answer may hold the app's close. */
const FLUSH_TIMEOUT_MS = 3000;

let processWideInstalled = false;

/**
 * What must be process-wide, installed by the first app and kept: the context manager
 * (AsyncLocalStorage: how a statement finds its request's span) and the W3C `traceparent`
 * propagator (a caller's trace is continued).
 */
function installProcessWide(): void {
  if (processWideInstalled) return;
  processWideInstalled = true;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/**
 * The app's tracer provider: spans batched (BatchSpanProcessor: up to 512 per export, at most
 * 5 s apart; OTEL_BSP_* change that) and sent as OTLP/HTTP with JSON bodies to the traces
 * endpoint (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT and _COMPRESSION apply). Sampling follows
 * OTEL_TRACES_SAMPLER (by default: every trace a caller has not marked unsampled). The
 * provider is not made global, so apps sharing a process (tests) export on their own.
 */
export function createTracerProvider(tracing: NonNullable<Config['tracing']>, log: FastifyBaseLogger): BasicTracerProvider {
  installProcessWide();
  // OpenTelemetry reports its own trouble (a collector refusing batches, spans dropped) here, silently by default.
  const warn = (message: string) => log.warn(`OpenTelemetry: ${message}`);
  const quiet = () => {};
  diag.setLogger({ error: warn, warn, info: quiet, debug: quiet, verbose: quiet }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  return new BasicTracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': tracing.serviceName })),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: tracing.endpoint }))],
  });
}

/** Sends the spans still batched and stops the provider, waiting at most FLUSH_TIMEOUT_MS (a collector that does not answer is retried). */
export async function shutdownTracerProvider(provider: BasicTracerProvider, log: FastifyBaseLogger): Promise<void> {
  const timedOut = Symbol('timed out');
  const stopped = provider.shutdown().catch((err: unknown) => log.warn({ err }, 'OpenTelemetry: stopping the tracer provider failed'));
  const outcome = await Promise.race([stopped, sleep(FLUSH_TIMEOUT_MS, timedOut, { ref: false })]);
  if (outcome === timedOut) log.warn({ timeoutMs: FLUSH_TIMEOUT_MS }, 'OpenTelemetry: the last spans were not sent in time');
}

import { FastifyOtelInstrumentation } from '@fastify/otel';
import type { TracerProvider } from '@opentelemetry/api';

/**
 * The span of each request, from @fastify/otel (the Fastify team's instrumentation: a plugin,
 * nothing patched): a server span named by method and route (`GET /v1/pets`), with the
 * route's operationId (`animal_store.operation`), the path without its query string and the
 * status code. Nothing from the headers is read, so never a key.
 */
export function requestSpans(provider: TracerProvider) {
  const instrumentation = new FastifyOtelInstrumentation({
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
  instrumentation.setTracerProvider(provider);

  return instrumentation.plugin();
}

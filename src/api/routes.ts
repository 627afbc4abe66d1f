import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import type { components } from '../../generated/openapi.js';
import { errors } from '../errors/apiError.js';
import { continueIfExpected } from '../http/protocolAnswers.js';
import { operationsById, type OpenApiDocument, type OperationObject } from '../openapi/document.js';
import type { OperationHandlers } from '../openapi/operationTypes.js';

export interface RoutesOptions {
  doc: OpenApiDocument;
  handlers: OperationHandlers;
  /** Absolute URL of an operation (for the successor Link of a deprecated one). */
  urlOf(operationId: string): string;
}

/**
 * Wires every operation of openapi.yaml to its handler through fastify-openapi-glue.
 * Security and scopes, deprecation and stability are read from the document here, per operation:
 * the glue's own security handlers would run after validation, and authentication must come first.
 */
export async function operationRoutes(app: FastifyInstance, opts: RoutesOptions): Promise<void> {
  // Typed per operation in the feature folders (pets/, orders/); the glue hands each one its validated request.
  const handlers = opts.handlers as unknown as Record<string, RouteOptions['handler']>;
  const operations = operationsById(opts.doc);
  const missing = [...operations.keys()].filter((id) => !(id in handlers));
  if (missing.length > 0) throw new Error(`No handler for operation(s): ${missing.join(', ')}`);

  function routeOptions(operationId: string): Partial<RouteOptions> {
    const { operation } = operations.get(operationId)!;
    // Only bearerAuth is implemented: an operation asking for anything else stops start-up rather than go unprotected.
    const schemes = new Set((operation.security ?? opts.doc.security ?? []).flatMap((requirement) => Object.keys(requirement)));
    const unsupported = [...schemes].filter((s) => s !== 'bearerAuth');
    if (unsupported.length > 0) throw new Error(`Operation ${operationId} uses unsupported security scheme(s): ${unsupported.join(', ')}`);
    // Every operation names the scope a key needs (x-required-scope); one without stops start-up rather than go unchecked.
    const scope = operation['x-required-scope'] as components['schemas']['Scope'] | undefined;
    if (schemes.size > 0 && !scope) throw new Error(`Operation ${operationId} declares no x-required-scope`);
    const headers = documentedHeaders(operation, opts.urlOf);
    const requestBody = operation.requestBody as { required?: boolean; content: Record<string, unknown> } | undefined;
    const bodyRequired = requestBody?.required === true;
    // Fastify validates a body only against the schema of its own media type: one the document does not list for this operation is refused before validation.
    const mediaTypes = Object.keys(requestBody?.content ?? {});
    return {
      handler: handlers[operationId]!,
      // For the request log and metrics, and the scope the API's gate checks (gate.ts; the glue's own route config has nothing else).
      config: { operationId, ...(schemes.size > 0 && { scope: scope! }) },
      // HEAD wherever GET is (RFC 9110 §9.1): Fastify answers it as GET without the body, through the same hooks.
      exposeHeadRoute: true,
      // Fastify skips body validation when there is no body at all; a required body must still be there.
      ...(requestBody !== undefined && { preValidation: bodyRequired ? [documentedMediaType(mediaTypes), requireBody] : [documentedMediaType(mediaTypes)] }),
      ...(operation.requestBody !== undefined && { preParsing: continueIfExpected }),
      // On every response of the operation, errors included (a route's onSend runs for them too).
      ...(Object.keys(headers).length > 0 && {
        onSend: (_request, reply, payload, done) => {
          reply.headers(headers);
          done(null, payload);
        },
      }),
    };
  }

  await app.register(openapiGlue, {
    specification: structuredClone(opts.doc), // the glue dereferences in place
    operationResolver: routeOptions as never,
  });
}

/**
 * The headers the document gives every response of an operation: from its `x-deprecation`,
 * Deprecation (RFC 9745), Sunset (RFC 8594) and a successor Link; from an `Experimental` badge
 * (Redocly's `x-badges`, see Stability in docs/API-BEHAVIOUR.md), `API-Stability: experimental`.
 */
function documentedHeaders(operation: OperationObject, urlOf: (operationId: string) => string): Record<string, string> {
  const deprecation = operation['x-deprecation'];
  const experimental = (operation['x-badges'] ?? []).some((badge) => badge.name === 'Experimental');
  return {
    ...(deprecation && {
      deprecation: `@${Math.floor(Date.parse(deprecation.since) / 1000)}`,
      sunset: new Date(deprecation.sunset).toUTCString(),
      link: `<${urlOf(deprecation.successor)}>; rel="successor-version"`,
    }),
    ...(experimental && { 'api-stability': 'experimental' }),
  };
}

function documentedMediaType(mediaTypes: string[]) {
  return async function checkMediaType(request: FastifyRequest): Promise<void> {
    if (request.body === undefined) return;
    const essence = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (!mediaTypes.includes(essence)) throw errors.unsupported_media_type(`This operation takes ${mediaTypes.join(' or ')}, not ${essence || 'no media type'}.`);
  };
}

async function requireBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) throw errors.validation_failed('body is required (application/json)');
}

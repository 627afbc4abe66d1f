import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import type { components } from '../../generated/openapi.js';
import { errors } from '../errors/apiError.js';
import { continueIfExpected } from '../http/protocolAnswers.js';
import { operationsById, queryParameterNames, stabilityOf, type OpenApiDocument, type OperationObject } from '../openapi/document.js';
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
    const entry = operations.get(operationId)!;
    const { operation } = entry;
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
      preValidation: [
        onlyDocumentedQuery(queryParameterNames(opts.doc, entry)),
        ...(requestBody !== undefined ? [documentedMediaType(mediaTypes)] : []),
        ...(bodyRequired ? [requireBody] : []),
      ],
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
 * Deprecation (RFC 9745), Sunset (RFC 8594) and, when it names one, a successor Link (a deprecated
 * operation's, or a beta operation's notice of a coming change); from its badge (Redocly's
 * `x-badges`, see Stability in docs/API-BEHAVIOUR.md), `API-Stability: experimental` or `beta`.
 */
export function documentedHeaders(operation: OperationObject, urlOf: (operationId: string) => string): Record<string, string> {
  const deprecation = operation['x-deprecation'];
  const stability = stabilityOf(operation);
  // Only an operation on its way out, or a beta one announcing a change, may carry the headers.
  if (deprecation && operation.deprecated !== true && stability !== 'beta') {
    throw new Error(`Operation ${operation.operationId} has an x-deprecation but is neither deprecated nor beta`);
  }
  if (deprecation && !(Date.parse(deprecation.since) >= 0 && Date.parse(deprecation.sunset) >= 0)) {
    throw new Error(`Operation ${operation.operationId}: its x-deprecation needs since and sunset as dates (they become Deprecation and Sunset)`);
  }
  if (deprecation && operation.deprecated !== true && !deprecation.description) {
    throw new Error(`Operation ${operation.operationId}: the x-deprecation of a beta operation says what changes (description)`);
  }
  return {
    ...(deprecation && {
      deprecation: `@${Math.floor(Date.parse(deprecation.since) / 1000)}`,
      sunset: new Date(deprecation.sunset).toUTCString(),
      ...(deprecation.successor && { link: `<${urlOf(deprecation.successor)}>; rel="successor-version"` }),
    }),
    ...(stability !== 'stable' && { 'api-stability': stability }),
  };
}


/**
 * A query parameter the operation does not define is refused, not ignored (docs/API-BEHAVIOUR.md):
 * a client still sending one the API no longer has learns it at once instead of getting unfiltered results.
 */
function onlyDocumentedQuery(names: Set<string>) {
  return async function checkQuery(request: FastifyRequest): Promise<void> {
    const unknown = Object.keys((request.query ?? {}) as object).find((name) => !names.has(name));
    if (unknown !== undefined) throw errors.validation_failed(`query parameter '${printable(unknown)}' is not defined for this operation`);
  };
}

/** A name from the request as a message may quote it: control and format characters replaced, at most 100 of them. */
const printable = (name: string) => {
  const shown = name.replace(/[\p{Cc}\p{Cf}]/gu, '?');
  return shown.length > 100 ? `${shown.slice(0, 100)}…` : shown;
};

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

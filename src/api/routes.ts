import type { FastifyInstance, FastifyRequest, onSendHookHandler, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { requireApiKey } from '../auth/plugin.js';
import { continueIfExpected } from '../http/lingeringClose.js';
import { errors } from '../errors/apiError.js';
import { operationsById, type OpenApiDocument, type OperationEntry } from '../openapi/document.js';
import type { OperationHandlers } from '../openapi/operationTypes.js';
import { deprecationHeaders } from './deprecation.js';
import { stabilityHeaders } from './stability.js';

export interface RoutesOptions {
  doc: OpenApiDocument;
  handlers: OperationHandlers;
  /** Absolute URL of an operation (for the successor Link of a deprecated one). */
  operationUrl(entry: OperationEntry): string;
}

/**
 * Wires every operation of openapi.yaml to its handler through fastify-openapi-glue.
 * Security, deprecation and stability are read from the document here, per operation: the
 * glue's own security handlers would run after validation, and authentication must come first.
 */
export async function operationRoutes(app: FastifyInstance, opts: RoutesOptions): Promise<void> {
  // Typed per operation in the feature folders (pets/, orders/); the glue hands each one its validated request.
  const handlers = opts.handlers as unknown as Record<string, RouteOptions['handler']>;
  const operations = operationsById(opts.doc);
  const missing = [...operations.keys()].filter((id) => !(id in handlers));
  if (missing.length > 0) throw new Error(`No handler for operation(s): ${missing.join(', ')}`);

  function routeOptions(operationId: string): Partial<RouteOptions> {
    const entry = operations.get(operationId)!;
    const deprecation = entry.operation['x-deprecation'];
    // On every response of the operation, errors included (a route's onSend runs for them too).
    const headers = {
      ...(deprecation &&
        deprecationHeaders({
          since: deprecation.since,
          sunset: deprecation.sunset,
          successorUrl: opts.operationUrl(operations.get(deprecation.successor)!),
        })),
      ...stabilityHeaders(entry.operation),
    };
    const bodyRequired = (entry.operation.requestBody as { required?: boolean } | undefined)?.required === true;
    return {
      handler: handlers[operationId]!,
      // For the request log and metrics (the glue's own route config has nothing else).
      config: { operationId },
      // HEAD wherever GET is (RFC 9110 §9.1): Fastify answers it as GET without the body, through the same hooks.
      exposeHeadRoute: true,
      onRequest: requiredSchemes(opts.doc, entry).length > 0 ? [requireApiKey] : [],
      // Fastify skips body validation when there is no body at all; a required body must still be there.
      ...(bodyRequired && { preValidation: requireBody }),
      ...(entry.operation.requestBody !== undefined && { preParsing: continueIfExpected }),
      ...(Object.keys(headers).length > 0 && { onSend: addHeaders(headers) }),
    };
  }

  await app.register(openapiGlue, {
    specification: structuredClone(opts.doc), // the glue dereferences in place
    operationResolver: routeOptions as never,
  });
}

/** Sets the same headers (computed once, at start-up) on every response of a route. */
function addHeaders(headers: Record<string, string>): onSendHookHandler {
  return (_request, reply, payload, done) => {
    reply.headers(headers);
    done(null, payload);
  };
}

async function requireBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) throw errors.validation_failed('body is required (application/json)');
}

/** The security schemes an operation needs; only bearerAuth is implemented, anything else stops start-up. */
function requiredSchemes(doc: OpenApiDocument, { operation }: OperationEntry): string[] {
  const requirements = operation.security ?? doc.security ?? [];
  const schemes = [...new Set(requirements.flatMap((r) => Object.keys(r)))];
  const unsupported = schemes.filter((s) => s !== 'bearerAuth');
  if (unsupported.length > 0) {
    throw new Error(`Operation ${operation.operationId} uses unsupported security scheme(s): ${unsupported.join(', ')}`);
  }
  return schemes;
}

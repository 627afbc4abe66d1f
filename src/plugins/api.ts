import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import openapiGlue from 'fastify-openapi-glue';
import { requireApiKey } from '../auth/authenticate.js';
import { createHandlers, type HandlerDeps } from '../handlers/index.js';
import { addDeprecationHeaders } from '../http/deprecation.js';
import { ApiError } from '../http/errors.js';
import { operationsById, type OpenApiDocument, type OperationEntry } from '../openapi/document.js';

export const API_PREFIX = '/v1';

export interface ApiOptions extends HandlerDeps {
  doc: OpenApiDocument;
}

/**
 * Wires every operation of openapi.yaml to its handler through fastify-openapi-glue.
 * Security and deprecation are read from the document here, per operation: the glue's
 * own security handlers would run after validation, and authentication must come first.
 * (The caller itself is identified earlier, by the rate limiter's onRequest hook.)
 */
export async function registerApi(app: FastifyInstance, opts: ApiOptions): Promise<void> {
  // Typed per operation in handlers/; the glue hands each one its validated request.
  const handlers = createHandlers(opts) as unknown as Record<string, RouteOptions['handler']>;
  const operations = operationsById(opts.doc);
  const missing = [...operations.keys()].filter((id) => !(id in handlers));
  if (missing.length > 0) throw new Error(`No handler for operation(s): ${missing.join(', ')}`);

  function routeOptions(operationId: string): Partial<RouteOptions> {
    const entry = operations.get(operationId)!;
    const schemes = requiredSchemes(opts.doc, entry);
    const deprecation = entry.operation['x-deprecation'];
    const bodyRequired = (entry.operation.requestBody as { required?: boolean } | undefined)?.required === true;
    return {
      handler: handlers[operationId]!,
      onRequest: schemes.length > 0 ? [requireApiKey] : [],
      // Fastify skips body validation when there is no body at all; a required body must still be there.
      ...(bodyRequired && { preValidation: requireBody }),
      ...(deprecation && {
        onSend: addDeprecationHeaders({
          since: deprecation.since,
          sunset: deprecation.sunset,
          successorUrl: `${opts.publicBaseUrl}${API_PREFIX}${operations.get(deprecation.successor)!.path}`,
        }),
      }),
    };
  }

  await app.register(openapiGlue, {
    specification: structuredClone(opts.doc), // the glue dereferences in place
    prefix: API_PREFIX,
    operationResolver: routeOptions as never,
  });
}

async function requireBody(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) throw new ApiError(400, 'validation_failed', 'body is required (application/json)');
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

import type { FastifyInstance, HTTPMethods } from 'fastify';
import { errors } from '../errors/apiError.js';
import { methodsOf, toRoutePath, type OpenApiDocument } from '../openapi/document.js';

/**
 * A path of the document asked with a method it does not have: 405 with `Allow`
 * (RFC 9110 §15.5.6) rather than 404, for every method the router knows.
 */
export function methodNotAllowedRoutes(app: FastifyInstance, doc: OpenApiDocument, opts: { corsPreflight: boolean }): void {
  for (const [path, item] of Object.entries(doc.paths)) {
    const allowed = methodsOf(item).map((m) => m.toUpperCase());
    const allow = allowed.join(', ');
    // With CORS on, OPTIONS is a preflight, answered at the root (uncounted).
    const others = app.supportedMethods.filter((m) => !allowed.includes(m) && !(opts.corsPreflight && m === 'OPTIONS')) as HTTPMethods[];
    app.route({
      method: others,
      url: toRoutePath(path),
      exposeHeadRoute: false,
      handler: async (request) => {
        throw errors.method_not_allowed(`${request.method} is not allowed here; use ${allow}.`, { allow });
      },
    });
  }
}

import type { FastifyInstance, HTTPMethods } from 'fastify';
import { errors } from '../errors/apiError.js';
import { allowedMethods, toRoutePath, type OpenApiDocument } from '../openapi/document.js';

/**
 * A path of the document asked with a method it does not have: 405 with `Allow`
 * (RFC 9110 §15.5.6) rather than 404, for every method the router knows.
 */
export function methodNotAllowedRoutes(app: FastifyInstance, doc: OpenApiDocument): void {
  for (const [path, item] of Object.entries(doc.paths)) {
    const allowed = allowedMethods(item);
    const allow = allowed.join(', ');
    // OPTIONS too: a CORS preflight is answered before it gets here (http/cors.ts), any other OPTIONS is a 405.
    const others = app.supportedMethods.filter((m) => !allowed.includes(m)) as HTTPMethods[];
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

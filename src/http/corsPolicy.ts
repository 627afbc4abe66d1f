import { allowedMethods, toRoutePath, type OpenApiDocument } from '../openapi/document.js';
import { distinctNames, headerParameterNames, responseHeaderNames } from '../openapi/headers.js';

/**
 * Request headers a browser app sends that the document does not declare as parameters:
 * the bearer key and the body's media type (the document's `security` and `requestBody`), and
 * the caller's request id, read on every request (http/requestId.ts).
 */
const ALWAYS_ALLOWED = ['Authorization', 'Content-Type', 'X-Request-Id'];

/** What CORS lets a browser app on a listed origin do, all read from openapi.yaml. */
export interface CorsPolicy {
  /** Per API route (a Fastify route URL under the base path): the methods a preflight allows there. */
  methods: Map<string, string[]>;
  /** Request headers a preflight allows: the document's header parameters and ALWAYS_ALLOWED. */
  allowedHeaders: string[];
  /** Response headers the page may read: every header a response of the document declares. */
  exposedHeaders: string[];
}

/**
 * Derived rather than listed, so that a new operation, method or header in the document is
 * usable from a browser without a CORS edit: each path allows what its 405 `Allow` lists.
 */
export function corsPolicy(doc: OpenApiDocument, basePath: string): CorsPolicy {
  return {
    methods: new Map(Object.entries(doc.paths).map(([path, item]) => [`${basePath}${toRoutePath(path)}`, allowedMethods(item)])),
    allowedHeaders: distinctNames([...ALWAYS_ALLOWED, ...headerParameterNames(doc)]),
    exposedHeaders: responseHeaderNames(doc),
  };
}

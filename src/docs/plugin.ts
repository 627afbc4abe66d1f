import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { OpenApiDocument } from '../openapi/document.js';

export interface DocsOptions {
  doc: OpenApiDocument;
  /** This instance's own API address, put first in `servers` so "Try it out" works here. */
  apiUrl: string;
}

/** Browsers and proxies may keep the document and the UI's assets for a while; a deploy changes them rarely. */
const CACHE = 'public, max-age=300';

/**
 * Serves openapi.yaml as /openapi.json and in Swagger UI at /docs: outside the API, so
 * free to read (not authenticated, not counted). Static mode keeps the document exactly
 * as written (dynamic mode would lose `deprecated` and `security`).
 */
export default async function docsPlugin(app: FastifyInstance, opts: DocsOptions): Promise<void> {
  const served: OpenApiDocument = {
    ...opts.doc,
    servers: [{ url: opts.apiUrl, description: 'This server' }, ...(opts.doc.servers ?? [])],
  };
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode < 300) reply.header('cache-control', CACHE);
    return payload;
  });
  await app.register(swagger, { mode: 'static', specification: { document: served as never } });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

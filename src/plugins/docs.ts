import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { OpenApiDocument } from '../openapi/document.js';

/**
 * Serves openapi.yaml as /openapi.json and in Swagger UI at /docs. Static mode keeps
 * the document exactly as written (dynamic mode would lose `deprecated` and `security`);
 * only this instance's own address is put first in `servers`, so "Try it out" works here.
 */
export async function registerDocs(app: FastifyInstance, doc: OpenApiDocument, publicBaseUrl: string): Promise<void> {
  const served: OpenApiDocument = {
    ...doc,
    servers: [{ url: `${publicBaseUrl}/v1`, description: 'This server' }, ...(doc.servers ?? [])],
  };
  await app.register(swagger, { mode: 'static', specification: { document: served as never } });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

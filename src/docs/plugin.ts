import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import type { OpenApiDocument } from '../openapi/document.js';
import { FAVICON_FILENAME, FAVICON_SVG } from './favicon.js';

export interface DocsOptions {
  doc: OpenApiDocument;
  /** This instance's own API address, put first in `servers` so "Try it out" works here. */
  apiUrl: string;
}

/** Browsers and proxies may keep the document and the UI's assets for a while; a deploy changes them rarely. */
const CACHE = 'public, max-age=300';

/** Where the UI lives; `GET /` sends browsers there. */
export const DOCS_PATH = '/docs';

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * Serves openapi.yaml as /openapi.json and in Swagger UI at /docs: outside the API, so
 * free to read (not authenticated, not counted). Static mode keeps the document exactly
 * as written (dynamic mode would lose `deprecated` and `security`).
 */
export default async function docsPlugin(app: FastifyInstance, opts: DocsOptions): Promise<void> {
  const served: OpenApiDocument = {
    ...opts.doc,
    // This server first, so "Try it out" calls it; the document's own entries after it, without a second copy of it.
    servers: [{ url: opts.apiUrl, description: 'This server' }, ...(opts.doc.servers ?? []).filter((s) => s.url !== opts.apiUrl)],
  };
  const title = (opts.doc.info as { title?: string } | undefined)?.title ?? 'API';
  app.addHook('onSend', async (_request, reply, payload) => {
    if (reply.statusCode < 300) reply.header('cache-control', CACHE);
    return payload;
  });
  await app.register(swagger, { mode: 'static', specification: { document: served as never } });
  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    uiConfig: {
      deepLinking: true,
      // The key entered under "Authorize" is kept in the browser's localStorage across reloads.
      persistAuthorization: true,
    },
    theme: {
      // The page inserts the title as HTML, unescaped.
      title: escapeHtml(title),
      favicon: [{ filename: FAVICON_FILENAME, rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: FAVICON_SVG }],
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  // The site's root is the documentation; a browser opening the bare address lands on it.
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect(DOCS_PATH, 302));
}

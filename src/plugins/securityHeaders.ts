import type { FastifyInstance } from 'fastify';

/** Every response: its request id, no MIME sniffing; API and error responses: never cached. */
export function registerSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (!request.url.startsWith('/docs')) reply.header('cache-control', 'no-store');
    return payload;
  });
}

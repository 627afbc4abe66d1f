import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { baseHeaders } from '../errors/render.js';

/**
 * Every response: its request id and no MIME sniffing. Caching is each scope's choice.
 * Set as the request arrives (errors set them again, see errors/render.ts): a hook at send
 * time would run for every response for nothing.
 */
export default fp(
  async function securityHeadersPlugin(app: FastifyInstance) {
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(baseHeaders(request.id));
      done();
    });
  },
  { name: 'security-headers' },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { baseHeaders } from '../errors/render.js';

/** Every response: its request id and no MIME sniffing. Caching is each scope's choice. */
export default fp(
  async function securityHeadersPlugin(app: FastifyInstance) {
    app.addHook('onSend', async (request, reply, payload) => {
      reply.headers(baseHeaders(request.id));
      return payload;
    });
  },
  { name: 'security-headers' },
);

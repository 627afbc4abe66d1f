import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the shutdown signal on: readiness fails and every response closes its connection. */
    readonly draining: boolean;
    /** Starts the drain: the listener keeps serving, but load balancers are told to go elsewhere. */
    startDrain(): void;
  }
}

/**
 * The first phase of a graceful stop (see process/serve.ts). While draining, `/readyz`
 * answers 503 so load balancers take the instance out, requests are still served in
 * full, and each response carries `Connection: close` so clients reconnect elsewhere.
 */
export default fp(
  async function drainPlugin(app: FastifyInstance) {
    let draining = false;
    app.decorate('draining', {
      getter: () => draining,
    });
    app.decorate('startDrain', () => {
      draining = true;
    });
    // At send time, so that requests already in flight when the drain starts close too.
    app.addHook('onSend', (_request, reply, payload, done) => {
      if (draining) reply.header('connection', 'close');
      done(null, payload);
    });
  },
  { name: 'drain' },
);

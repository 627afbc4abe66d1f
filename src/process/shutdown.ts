import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { serviceUnavailable } from '../errors/apiError.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the start of a shutdown: readiness fails (health/plugin.ts) and every response closes its connection. */
    readonly draining: boolean;
    /** Drains for `drainMs` (timed by `wait`; tests pass their own), then closes the app. Calls after the first get the same stop. */
    shutdown(drainMs: number, wait?: (ms: number) => Promise<unknown>): Promise<void>;
  }
}

/**
 * Graceful shutdown, in the order a load balancer needs. First the drain: readiness fails and
 * every response carries `Connection: close`, so clients reconnect elsewhere, while the listener
 * keeps serving (closing it at once would reset the connections still queued in the kernel's
 * backlog). Then app.close(): no new connections, requests in flight finish, connections close as
 * they fall idle, and a request that still arrives on one gets 503 in the Error shape
 * (return503OnClosing is off).
 */
export default fp(
  async function shutdownPlugin(app: FastifyInstance) {
    let draining = false;
    let closing = false;
    let stopping: Promise<void> | undefined;
    app.decorate('draining', { getter: () => draining });
    app.decorate('shutdown', (drainMs: number, wait: (ms: number) => Promise<unknown> = sleep) => {
      stopping ??= (async () => {
        draining = true;
        await wait(drainMs);
        app.log.info('closing: no new connections, finishing requests in flight');
        await app.close();
      })();
      return stopping;
    });
    app.addHook('preClose', async () => {
      closing = draining = true;
      // server.close() drops only the connections idle at that moment; one whose request ends later would hold it open until its keep-alive timeout.
      const timer = setInterval(() => app.server.closeIdleConnections(), 50).unref();
      app.server.once('close', () => clearInterval(timer));
    });
    app.addHook('onRequest', (_request, reply, done) => {
      if (!draining) return done();
      reply.header('connection', 'close');
      done(closing ? serviceUnavailable() : undefined);
    });
  },
  { name: 'shutdown' },
);

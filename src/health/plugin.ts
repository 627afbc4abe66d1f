import type { FastifyInstance } from 'fastify';
import { serviceUnavailable } from '../errors/apiError.js';

/**
 * Liveness and readiness probes, outside the API: no authentication, not counted.
 * A successful probe is not logged (`quietWhenOk`): load balancers ask every few seconds.
 */
export default async function healthPlugin(app: FastifyInstance): Promise<void> {
  const config = { quietWhenOk: true };
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('cache-control', 'no-store');
    done();
  });

  app.get('/healthz', { config }, async () => ({ status: 'ok' }));

  app.get('/readyz', { config }, async (request) => {
    if (app.draining) throw serviceUnavailable(); // shutting down: send traffic elsewhere
    try {
      await app.database.pool.query('SELECT 1');
    } catch (err) {
      app.faults.report('readiness check failed: database unreachable', { err: (err as Error).message });
      throw serviceUnavailable();
    }
    // A Redis outage degrades rate limiting to per-instance counters; the instance still serves.
    return { status: 'ready', checks: { database: 'ok', rateLimits: app.rateLimitStore.mode() } };
  });
}

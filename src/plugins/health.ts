import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { serviceUnavailable } from '../http/errors.js';
import type { RateLimitStore } from '../ratelimit/windows.js';

/** Liveness and readiness probes, outside /v1 and without authentication. */
export function registerHealth(app: FastifyInstance, pool: pg.Pool, rateLimitStore: RateLimitStore): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async () => {
    try {
      await pool.query('SELECT 1');
    } catch (err) {
      app.log.warn({ err }, 'readiness check failed: database unreachable');
      throw serviceUnavailable();
    }
    // A Redis outage degrades rate limiting to per-instance counters; the instance still serves.
    return { status: 'ready', checks: { database: 'ok', rateLimits: rateLimitStore.mode() } };
  });
}

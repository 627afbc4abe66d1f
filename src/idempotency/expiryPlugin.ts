import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { IDEMPOTENCY_RETENTION_HOURS } from '../limits.js';

/** Deletes idempotency keys older than the retention once at start and then hourly. */
export default fp(
  async function idempotencyExpiryPlugin(app: FastifyInstance) {
    const expire = () =>
      app.database.pool
        .query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [IDEMPOTENCY_RETENTION_HOURS])
        .catch((err) => app.log.warn({ err }, 'expiring idempotency keys failed'));
    void expire();
    const timer = setInterval(expire, 60 * 60 * 1000).unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'idempotency-expiry', dependencies: ['database'] },
);

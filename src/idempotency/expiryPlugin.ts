import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { IDEMPOTENCY_RETENTION_HOURS } from '../limits.js';
import { idempotencyStore } from './store.js';

const HOUR_MS = 60 * 60 * 1000;

/** Deletes expired idempotency keys once at start and then hourly. */
export default fp(
  async function idempotencyExpiryPlugin(app: FastifyInstance) {
    const expire = () =>
      idempotencyStore
        .expire(app.database.pool, IDEMPOTENCY_RETENTION_HOURS)
        .catch((err) => app.log.warn({ err }, 'expiring idempotency keys failed'));
    void expire();
    const timer = setInterval(expire, HOUR_MS).unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'idempotency-expiry', dependencies: ['database'] },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type pg from 'pg';
import { EVENT_RETENTION_DAYS, IDEMPOTENCY_RETENTION_HOURS, RETENTION_SWEEP_MS } from '../limits.js';

/**
 * Deletes what is past its documented retention: Idempotency-Keys with their saved answers,
 * and events (with their recipients and delivery attempts, ON DELETE CASCADE in migration 011).
 * Each statement is one index range (created_at); returns how many rows each removed.
 */
export async function deleteExpired(pool: pg.Pool): Promise<{ idempotencyKeys: number; events: number }> {
  const keys = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [IDEMPOTENCY_RETENTION_HOURS]);
  const events = await pool.query(`DELETE FROM events WHERE created_at < now() - make_interval(days => $1)`, [EVENT_RETENTION_DAYS]);
  return { idempotencyKeys: keys.rowCount ?? 0, events: events.rowCount ?? 0 };
}

/** Runs deleteExpired once at start and then every RETENTION_SWEEP_MS; a failure is logged and retried at the next sweep. */
export default fp(
  async function retentionPlugin(app: FastifyInstance) {
    const sweep = () => deleteExpired(app.database.pool).catch((err) => app.log.warn({ err }, 'deleting expired idempotency keys and events failed'));
    void sweep();
    const timer = setInterval(sweep, RETENTION_SWEEP_MS).unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'retention', dependencies: ['database'] },
);

import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { openDatabase, type Database } from './database.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The migrated database (Postgres or the embedded PostgreSQL), closed with the app. */
    database: Database;
  }
}

/** Opens the database (Postgres from DATABASE_URL, else the embedded PostgreSQL) and closes it last. */
export default fp(
  async function databasePlugin(app: FastifyInstance, opts: { config: Config }) {
    const database = await openDatabase({
      databaseUrl: opts.config.databaseUrl,
      dataDir: opts.config.dataDir,
      poolMax: opts.config.dbPoolMax,
      poolWaitMs: opts.config.dbPoolWaitMs,
      serverTimeouts: opts.config.db,
      pooling: opts.config.databasePooling,
      owner: { port: opts.config.port, metricsPort: opts.config.metrics.enabled ? opts.config.metrics.port : undefined },
      // An outage ends every idle connection at once: one line per interval with a count, and
      // only the message and SQLSTATE (pg-pool attaches the whole client, connection parameters included).
      onIdleError: (err) => app.faults.report('idle database connection lost', { err: err.message, code: (err as { code?: string }).code }),
    });
    // A new connection opened: whatever database faults were still being counted are over, so their counts are written.
    database.pool.on('connect', () => app.faults.flush());
    app.decorate('database', database);
    app.addHook('onClose', () => database.close());
  },
  { name: 'database', dependencies: ['errors'] },
);

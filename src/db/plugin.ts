import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { openDatabase, type Database } from './database.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The migrated database (Postgres or the embedded store), closed with the app. */
    database: Database;
  }
}

/** Opens the database (Postgres from DATABASE_URL, else the embedded store) and closes it last. */
export default fp(
  async function databasePlugin(app: FastifyInstance, opts: { config: Config }) {
    const database = await openDatabase({
      databaseUrl: opts.config.databaseUrl,
      dataDir: opts.config.dataDir,
      poolMax: opts.config.dbPoolMax,
      embeddedMode: 'serve',
      serverTimeouts: opts.config.db,
      pooling: opts.config.databasePooling,
      // An outage ends every idle connection at once: one line per interval with a count, and
      // only the message and SQLSTATE (pg-pool attaches the whole client, connection parameters included).
      onIdleError: (err) => app.faults.report('idle database connection lost', { err: err.message, code: (err as { code?: string }).code }),
    });
    // A new connection opened: whatever database faults were still being counted are over, so their counts are written.
    database.pool.on('connect', () => app.faults.flush());
    const { metrics, traceQuery } = app;
    // Timed once per statement for the metrics; traced (a span under the request's) when tracing is on.
    if (metrics || traceQuery) {
      database.statements.observe({
        ...(traceQuery && { start: (sql, connection) => ({ span: traceQuery(sql, connection) }) }),
        end(ms, failed, error, started) {
          metrics?.query(ms / 1000, failed);
          started?.span?.(ms, failed, error);
        },
      });
    }
    app.decorate('database', database);
    app.addHook('onClose', () => database.close());
  },
  { name: 'database', dependencies: ['errors', 'metrics', 'tracing'] },
);

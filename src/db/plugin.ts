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
      onIdleError: (err) => app.log.warn({ err }, 'idle database connection lost'),
    });
    app.decorate('database', database);
    app.addHook('onClose', () => database.close());
  },
  { name: 'database' },
);

import type pg from 'pg';
import { embeddedConnection, startEmbedded, isHeld, type EmbeddedServer } from './embedded.js';
import { migrate } from './migrate.js';
import { explainPostgresFailure } from './openErrors.js';
import { createPool } from './pgPool.js';
import type { Statements } from './statements.js';
import { checkServerTimeouts, type ServerTimeouts } from './serverTimeouts.js';

export interface Database {
  pool: pg.Pool;
  /** Every statement the pool runs: timed for an observer, and bounded (statements.ts). */
  statements: Statements;
  kind: 'postgres' | 'embedded';
  /** The migration files applied when it was opened, in order (none: it was up to date). */
  migrated: string[];
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax: number;
  onIdleError: (err: Error) => void;
  /** Postgres only: PGlite accepts these settings but cannot enforce them (no timers in WASM). */
  serverTimeouts?: ServerTimeouts;
  /** Postgres only: 'transaction' behind a transaction-pooling PgBouncer (see createPool). */
  pooling?: 'none' | 'transaction';
  /**
   * 'serve': open the embedded store and own it (the server).
   * 'attach': use the running server's embedded store if one holds it, else open it (the CLIs).
   */
  embeddedMode?: 'serve' | 'attach';
}

/**
 * The one place where the two backends differ: Postgres from DATABASE_URL, or the
 * embedded PGlite store served on a Unix socket. Either way the rest of the code
 * gets a migrated pg.Pool.
 */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  let embedded: EmbeddedServer | undefined;
  let connection: Parameters<typeof createPool>[0]['connection'];
  if (opts.databaseUrl) {
    connection = { connectionString: opts.databaseUrl };
  } else {
    const attach = opts.embeddedMode === 'attach' && (await isHeld(opts.dataDir));
    if (!attach) embedded = await startEmbedded(opts.dataDir, opts.onIdleError);
    connection = embeddedConnection(opts.dataDir);
  }
  const { pool, statements } = createPool({
    // The embedded store's bridge runs each connection's statements whole and keeps an open
    // transaction to its connection (see embedded.ts), so its pool can be as large as Postgres's.
    max: opts.poolMax,
    connection,
    onIdleError: opts.onIdleError,
    ...(opts.databaseUrl && opts.serverTimeouts && { serverTimeouts: opts.serverTimeouts, pooling: opts.pooling }),
  });
  let migrated: string[];
  try {
    if (opts.databaseUrl && opts.serverTimeouts) await checkServerTimeouts(pool, opts.serverTimeouts);
    migrated = await migrate(pool);
  } catch (err) {
    statements.stop();
    await pool.end().catch(() => {});
    await embedded?.close().catch(() => {});
    // The first connection is made here: a failure to reach Postgres is told in words.
    throw (opts.databaseUrl && explainPostgresFailure(err as Error, opts.databaseUrl)) || err;
  }
  return {
    pool,
    statements,
    kind: opts.databaseUrl ? 'postgres' : 'embedded',
    migrated,
    async close() {
      statements.stop();
      await pool.end();
      await embedded?.close();
    },
  };
}

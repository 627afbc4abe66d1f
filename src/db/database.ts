import path from 'node:path';
import type pg from 'pg';
import { startEmbedded, isHeld, EMBEDDED_SOCKET_PORT, type EmbeddedServer } from './embedded.js';
import { migrate } from './migrate.js';
import { createPool } from './pgPool.js';

export interface Database {
  pool: pg.Pool;
  kind: 'postgres' | 'embedded';
  close(): Promise<void>;
}

export interface DatabaseOptions {
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax: number;
  onIdleError: (err: Error) => void;
  /** Postgres only: PGlite accepts these settings but cannot enforce them (no timers in WASM). */
  serverTimeouts?: { statementTimeoutMs: number; lockTimeoutMs: number };
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
    if (!attach) embedded = await startEmbedded(opts.dataDir);
    const host = embedded?.socketDir ?? path.resolve(opts.dataDir);
    connection = { host, port: EMBEDDED_SOCKET_PORT, user: 'postgres', database: 'postgres' };
  }
  const pool = createPool({
    // One connection to the embedded store: its socket server interleaves the extended-protocol
    // messages of concurrent connections in its single session, so a statement can bind to
    // another client's (electric-sql/pglite#1046). PGlite runs one statement at a time anyway.
    max: opts.databaseUrl ? opts.poolMax : 1,
    connection,
    onIdleError: opts.onIdleError,
    ...(opts.databaseUrl && opts.serverTimeouts && { serverTimeouts: opts.serverTimeouts }),
  });
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end().catch(() => {});
    await embedded?.close().catch(() => {});
    throw err;
  }
  return {
    pool,
    kind: opts.databaseUrl ? 'postgres' : 'embedded',
    async close() {
      await pool.end();
      await embedded?.close();
    },
  };
}

import pg from 'pg';
import type { Claimant } from './embeddedOwner.js';
import { embeddedConnection, startEmbedded } from './embeddedPostgres.js';
import { migrate } from './migrate.js';
import { explainPostgresFailure } from './openErrors.js';
import { checkServerTimeouts, timeoutSettings, type ServerTimeouts } from './serverTimeouts.js';

export interface Database {
  pool: pg.Pool;
  /** A bounded pool of its own on the same database, with the same timeouts (background work's, off the API's pool); closed by its caller. */
  openPool(name: string, max: number): pg.Pool;
  kind: 'postgres' | 'embedded';
  /** The migration files applied when it was opened, in order (none: it was up to date). */
  migrated: string[];
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** Unset: the embedded PostgreSQL in dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax: number;
  onIdleError: (err: Error) => void;
  /** Server-side limits; the client gives up CLIENT_MARGIN_MS later (watchCheckouts). */
  serverTimeouts?: ServerTimeouts;
  /** 'transaction' behind a transaction-pooling PgBouncer: nothing session-level is sent; the role carries the timeouts. */
  pooling?: 'none' | 'transaction';
  /** How long a statement waits for a pooled connection (then 503 overloaded). */
  poolWaitMs?: number;
  /** A server's: the embedded store is claimed for it alone, refused if another server holds it (embeddedOwner.ts). Commands share. */
  owner?: Claimant;
}

/** int8 values (ids, counts) as exact JS numbers; anything beyond 2^53-1 is a bug, not data to round. */
function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${text} exceeds 2^53-1`);
  return n;
}
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 && format !== 'binary' ? parseInt8 : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** Past the server's statement timeout, how long the client waits for an answer (a hung server, a black-holed network). */
const CLIENT_MARGIN_MS = 5000;
/** How often checked-out connections are looked at: a hung statement fails within this after its bound. */
const SWEEP_MS = 1000;

/**
 * The client-side bound on a statement the database never answers: a connection checked out
 * for longer than `boundMs` is ended (pg's Client.end() cuts off a hung query, which fails as
 * "Connection terminated", the 503 kind), swept once a second while any is checked out. pg's own
 * query_timeout arms a timer per statement, which tripled listPets' p99 (docs/PERFORMANCE.md).
 */
function watchCheckouts(pool: pg.Pool, boundMs: number): void {
  const since = new Map<pg.PoolClient, number>();
  let sweep: NodeJS.Timeout | undefined;
  const forget = (client: pg.PoolClient) => {
    since.delete(client);
    if (since.size > 0 || !sweep) return;
    clearInterval(sweep);
    sweep = undefined;
  };
  pool.on('acquire', (client) => {
    since.set(client, performance.now());
    sweep ??= setInterval(() => {
      const now = performance.now();
      for (const [client, at] of since) {
        if (now - at <= boundMs) continue;
        forget(client);
        client.end().catch(() => {});
      }
    }, SWEEP_MS).unref();
  });
  pool.on('release', (_err, client) => forget(client));
  pool.on('remove', forget);
}

/** A pool that fails fast: bounded waits for a connection and for each checkout (watchCheckouts). Callers listen for 'error' (a killed idle connection). */
export function createPool(opts: Omit<DatabaseOptions, 'dataDir' | 'onIdleError'> & { connection: pg.PoolConfig; applicationName?: string }): pg.Pool {
  const { serverTimeouts, pooling = 'none' } = opts;
  const pool = new pg.Pool({
    ...opts.connection,
    max: opts.poolMax,
    types,
    connectionTimeoutMillis: opts.poolWaitMs ?? 3000,
    idleTimeoutMillis: 30_000,
    ...(serverTimeouts && pooling === 'none' && timeoutSettings(serverTimeouts)),
    keepAlive: true,
    application_name: opts.applicationName ?? 'animal-store',
  });
  watchCheckouts(pool, (serverTimeouts?.statementTimeoutMs ?? 5000) + CLIENT_MARGIN_MS);
  return pool;
}

/** Postgres from DATABASE_URL, or the embedded PostgreSQL in DATA_DIR: either way a migrated pg.Pool. */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const stopEmbedded = opts.databaseUrl ? undefined : await startEmbedded(opts.dataDir, opts.owner);
  const connection = opts.databaseUrl ? { connectionString: opts.databaseUrl } : embeddedConnection(opts.dataDir);
  const pool = createPool({ ...opts, connection });
  const openPool = (name: string, max: number) => {
    const own = createPool({ ...opts, connection, poolMax: max, applicationName: `animal-store-${name}` });
    own.on('error', (err) => closed || opts.onIdleError(err));
    return own;
  };
  let closed = false;
  // pool.end() resolves before its connections have closed: stopping the embedded server then ends them, which is no fault.
  pool.on('error', (err) => closed || opts.onIdleError(err));
  const close = async () => {
    closed = true;
    await pool.end();
    await stopEmbedded?.();
  };
  try {
    if (opts.serverTimeouts) await checkServerTimeouts(pool, opts.serverTimeouts);
    return { pool, openPool, kind: opts.databaseUrl ? 'postgres' : 'embedded', migrated: await migrate(pool), close };
  } catch (err) {
    await close().catch(() => {});
    // The first connection is made here: a failure to reach Postgres is told in words.
    throw (opts.databaseUrl && explainPostgresFailure(err as Error, opts.databaseUrl)) || err;
  }
}

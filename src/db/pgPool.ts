import pg from 'pg';
import { timeoutSettings, type ServerTimeouts } from './serverTimeouts.js';
import { watchStatements, type Statements } from './statements.js';

const INT8_OID = 20;

/** int8 values (ids, counts) as exact JS numbers; anything beyond 2^53-1 is a bug, not data to round. */
function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new RangeError(`int8 value ${text} exceeds 2^53-1`);
  return n;
}

const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface PoolOptions {
  max: number;
  /** Where the pool connects: a connection string, or host/port for the embedded socket. */
  connection: { connectionString: string } | { host: string; port: number; user: string; database: string };
  onIdleError: (err: Error) => void;
  /**
   * Server-side limits. Postgres cancels a statement past them and the transaction rolls
   * back, so an error answer never hides a commit, and the client's own timeout (later)
   * never leaves a backend running behind a dropped connection.
   */
  serverTimeouts?: ServerTimeouts;
  /**
   * 'none' (default): serverTimeouts go as startup parameters. 'transaction' (PgBouncer in
   * transaction mode): nothing session-level is sent, since PgBouncer refuses these
   * parameters and hands each server session to many clients; the role carries them.
   * Either way every query is an unnamed statement (no `name:`), which any pooler passes.
   */
  pooling?: 'none' | 'transaction';
}

/** How much later than the server's statement timeout the client gives up on its own. */
const CLIENT_MARGIN_MS = 5000;

/**
 * A pg pool that fails fast: bounded waits for a connection and for each statement (the
 * latter watched by statements.ts, which also times them for whoever observes).
 */
export function createPool({ max, connection, onIdleError, serverTimeouts, pooling = 'none' }: PoolOptions): { pool: pg.Pool; statements: Statements } {
  const pool = new pg.Pool({
    ...connection,
    max,
    types,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    ...(serverTimeouts && pooling === 'none' && timeoutSettings(serverTimeouts)),
    keepAlive: true,
    application_name: 'animal-store',
  });
  // A killed idle connection emits here; without a listener it would crash the process.
  pool.on('error', onIdleError);
  const statements = watchStatements(pool, { timeoutMs: (serverTimeouts?.statementTimeoutMs ?? 5000) + CLIENT_MARGIN_MS });
  return { pool, statements };
}

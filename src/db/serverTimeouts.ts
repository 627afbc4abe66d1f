import type pg from 'pg';
import { StartupError } from '../startupError.js';

/** Server-side limits: Postgres cancels a statement past them and rolls its transaction back. */
export interface ServerTimeouts {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
}

/** The Postgres settings (milliseconds) that carry them; an idle transaction is cut at twice the statement timeout. */
export function timeoutSettings(t: ServerTimeouts): Record<string, number> {
  return {
    statement_timeout: t.statementTimeoutMs,
    lock_timeout: t.lockTimeoutMs,
    idle_in_transaction_session_timeout: t.statementTimeoutMs * 2,
  };
}

/**
 * Refuses to start on connections that do not run with these settings. Behind a
 * transaction-pooling PgBouncer they come from the role (the service may not set them per
 * session), and a pooler that drops startup parameters would lose them silently: either
 * way statements would run, and hold locks, without bound.
 */
export async function checkServerTimeouts(pool: pg.Pool, timeouts: ServerTimeouts): Promise<void> {
  const wanted = timeoutSettings(timeouts);
  const { rows } = await pool.query<{ name: string; ms: number; role: string; db: string }>(
    `SELECT name, setting::int AS ms, current_user AS role, current_database() AS db FROM pg_settings WHERE name = ANY($1)`,
    [Object.keys(wanted)],
  );
  const actual = new Map(rows.map((r) => [r.name, r.ms]));
  const wrong = Object.entries(wanted).filter(([name, ms]) => actual.get(name) !== ms);
  if (wrong.length === 0) return;
  const { role, db } = rows[0]!;
  const found = wrong.map(([name, ms]) => `${name} = ${actual.get(name)} (wanted ${ms})`).join(', ');
  const fix = wrong.map(([name, ms]) => `ALTER ROLE "${role}" IN DATABASE "${db}" SET ${name} = ${ms};`).join(' ');
  throw new StartupError(
    `The database connections run with ${found}, not what DB_STATEMENT_TIMEOUT_MS and DB_LOCK_TIMEOUT_MS ask for. ` +
      `Behind a transaction-pooling PgBouncer (DATABASE_POOLING=transaction) set them on the role: ${fix}`,
  );
}

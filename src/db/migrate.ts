import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { migrationsDir } from '../paths.js';
import { withTransaction } from './transaction.js';

// Any constant shared by all instances; it serialises concurrent migration runs.
const MIGRATION_LOCK = 727_274_001;

/**
 * Applies every SQL file in migrations/ not yet recorded, in name order, all in one
 * transaction that holds a transaction-level advisory lock: nothing outlives the
 * transaction, so this works through a transaction-pooling PgBouncer as well as directly,
 * and a failed file leaves the schema as it was. `upTo`: only the files up to that name (a
 * database as an earlier version left it, for tests of the next migration).
 */
export async function migrate(pool: pg.Pool, opts: { upTo?: string } = {}): Promise<string[]> {
  const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql') && (opts.upTo === undefined || f <= opts.upTo)).sort();
  // Read before the transaction opens, so that it never idles waiting on the disk.
  const sql = await Promise.all(files.map((file) => readFile(path.join(migrationsDir, file), 'utf8')));
  return withTransaction(pool, async (client) => {
    // Migrations (and waiting for another instance's) may take longer than a request may.
    await client.query('SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: string }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((r) => r.version));
    const applied: string[] = [];
    for (const [i, file] of files.entries()) {
      if (done.has(file)) continue;
      await client.query(sql[i]!);
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [file]);
      applied.push(file);
    }
    return applied;
  });
}

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.js';
import { apiKeysRepository } from '../../src/auth/apiKeys.js';

/** Room for every request of the benchmark: limits are counted, never reached. */
export const HIGH_QUOTA = { perMinute: 100_000_000, perDay: 1_000_000_000 };

export interface BenchDatabase {
  /** DATABASE_URL for a Postgres database, or DATA_DIR for an embedded one. */
  env: Record<string, string>;
  key: string;
  db: Database;
  drop(): Promise<void>;
}

/** Fills `pets` with `count` rows in one statement: names, categories and the three statuses in turn. */
export async function seedPets(pool: pg.Pool, count: number): Promise<void> {
  await pool.query(
    `INSERT INTO pets (name, category_id, status)
     SELECT 'Pet ' || i, 1 + i % 50, (ARRAY['available', 'pending', 'sold'])[1 + i % 3]
       FROM generate_series(1, $1::int) AS i`,
    [count],
  );
  await pool.query('ANALYZE pets');
}

async function prepare(db: Database, pets: number): Promise<string> {
  await seedPets(db.pool, pets);
  return (await apiKeysRepository(db.pool).create({ plan: 'enterprise', name: 'bench', ...HIGH_QUOTA })).key;
}

/** A new, migrated and seeded Postgres database on the server of `adminUrl`. */
export async function createPostgresDatabase(adminUrl: string, name: string, pets: number): Promise<BenchDatabase> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir: '', poolMax: 2, onIdleError: () => {} });
  const key = await prepare(db, pets);
  return {
    env: { DATABASE_URL: url.toString() },
    key,
    db,
    async drop() {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

/** A new embedded (PGlite) store, seeded, then closed so that a server can open it. */
export async function createEmbeddedDatabase(pets: number): Promise<Omit<BenchDatabase, 'db'>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'as-bench-'));
  const db = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1, onIdleError: () => {} });
  const key = await prepare(db, pets);
  await db.close();
  return { env: { DATA_DIR: dir }, key, drop: () => rm(dir, { recursive: true, force: true }) };
}

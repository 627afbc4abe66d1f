import { rm } from 'node:fs/promises';
import type pg from 'pg';
import { openDatabase, type Database } from '../../src/db/database.js';
import { createKey } from '../lib/apiKeys.js';
import { createDatabase, dropDatabase } from '../lib/databases.js';
import { scratchDir } from '../lib/scratchDir.js';

/** Room for every request of the benchmark: limits are counted, never reached. */
export const HIGH_QUOTA = { perMinute: 100_000_000, perDay: 999_999_999 };

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

/** The benchmark's key, made as an operator makes one (npm run apikey), in the database of `env`. */
const benchKey = (env: Record<string, string>) => createKey(env, { plan: 'enterprise', name: 'bench', ...HIGH_QUOTA });

/** A new, migrated and seeded Postgres database on the server of `adminUrl`. */
export async function createPostgresDatabase(adminUrl: string, name: string, pets: number): Promise<BenchDatabase> {
  const env = { DATABASE_URL: await createDatabase(adminUrl, name) };
  const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: '', poolMax: 2, onIdleError: () => {} });
  await seedPets(db.pool, pets);
  return {
    env,
    key: await benchKey(env),
    db,
    async drop() {
      await db.close();
      await dropDatabase(adminUrl, name);
    },
  };
}

/** A new embedded (PGlite) store, seeded, then closed so that a server can open it. */
export async function createEmbeddedDatabase(pets: number): Promise<Omit<BenchDatabase, 'db'>> {
  const dir = await scratchDir('as-bench-');
  const db = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1, onIdleError: () => {} });
  await seedPets(db.pool, pets);
  await db.close();
  const env = { DATA_DIR: dir };
  return { env, key: await benchKey(env), drop: () => rm(dir, { recursive: true, force: true }) };
}

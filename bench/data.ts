import { rm } from 'node:fs/promises';
import type pg from 'pg';
import { openDatabase, type Database } from '../src/db/database.js';
import { createKey } from '../test/helpers/apiKeys.js';
import { createDatabase, dropDatabase, rememberDatabase } from '../test/helpers/databases.js';
import { scratchDir } from '../test/helpers/scratchDir.js';

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
  const drop = async () => {
    await db.close();
    await dropDatabase(adminUrl, name);
  };
  rememberDatabase(adminUrl, name, drop);
  await seedPets(db.pool, pets);
  return { env, key: await benchKey(env), db, drop };
}

/** A new embedded PostgreSQL, seeded, then closed so that a server can open it. */
export async function createEmbeddedDatabase(pets: number): Promise<Omit<BenchDatabase, 'db'>> {
  const dir = await scratchDir('as-bench-');
  const db = await openDatabase({ databaseUrl: undefined, dataDir: dir, poolMax: 1, onIdleError: () => {} });
  await seedPets(db.pool, pets);
  await db.close();
  const env = { DATA_DIR: dir };
  return { env, key: await benchKey(env), drop: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * For the order arms: `available` pets to place orders for, then `placed` of them already
 * ordered by the benchmark's key (its orders to list). Returns the key's id and the pets
 * that are left to order, lowest first.
 */
export async function seedOrders(db: BenchDatabase, { available, placed }: { available: number; placed: number }) {
  const { pool } = db.db;
  const { rows: pets } = await pool.query<{ first: number }>(
    `WITH added AS (
       INSERT INTO pets (name, category_id, status) SELECT 'Orderable ' || i, 1, 'available' FROM generate_series(1, $1::int) AS i RETURNING id
     ) SELECT min(id) AS first FROM added`,
    [available],
  );
  const { rows: keys } = await pool.query<{ id: number }>(`SELECT id FROM api_keys WHERE name = 'bench'`);
  const owner = keys[0]!.id;
  const first = pets[0]!.first;
  // The pet and its order in one statement: the store refuses a pending pet without a placed order.
  await pool.query(
    `WITH pending AS (UPDATE pets SET status = 'pending' WHERE id >= $2 AND id < $2 + $3 RETURNING id)
     INSERT INTO orders (pet_id, api_key_id) SELECT id, $1 FROM pending`,
    [owner, first, placed],
  );
  await pool.query('ANALYZE pets; ANALYZE orders');
  let next = first + placed;
  const last = first + available - 1;
  return {
    owner,
    /** The next pet nobody has ordered yet. */
    nextPet: () => {
      if (next > last) throw new Error(`all ${available} orderable pets are ordered: seed more`);
      return next++;
    },
  };
}

import pg from 'pg';
import { createKey } from '../test/helpers/apiKeys.js';
import { createDatabase, dropDatabase, rememberDatabase } from '../test/helpers/databases.js';
import { runScript } from '../test/helpers/processes.js';

export interface BenchDatabase {
  env: { DATABASE_URL: string };
  /** An enterprise key whose quota no run reaches: every request is authenticated and counted, none refused. */
  key: string;
  /** The key's account: the ceiling places and lists orders and changes pets as that account. */
  owner: number;
  /** Placed orders the account may hold at once: more than placeOrder ever places. */
  maxOpenOrders: number;
  /** The next pet nobody has ordered yet. */
  nextPet(): number;
  /** updatePet's next request: a pet of the account (its id, the path after /pets/), renamed and moved to the other status each time round. */
  nextPatch(): { path: string; body: string };
  drop(): Promise<void>;
}

/**
 * A new database on the server of `adminUrl`, migrated as an operator does it (npm run migrate),
 * with `pets` pets in turn available, pending and sold, `owned` available pets of the
 * benchmark's account for updatePet, then `orderable` available pets for placeOrder to take
 * one each, and `placed` orders of the benchmark's account for listOrders.
 */
export async function createBenchDatabase(adminUrl: string, name: string, { pets, owned, orderable, placed }: Record<'pets' | 'owned' | 'orderable' | 'placed', number>): Promise<BenchDatabase> {
  const env = { DATABASE_URL: await createDatabase(adminUrl, name) };
  const migrated = await runScript('scripts/migrate.ts', [], env);
  if (migrated.code !== 0) throw new Error(`npm run migrate exited with ${migrated.code}:\n${migrated.stderr}`);
  const maxOpenOrders = placed + orderable;
  const key = await createKey(env, { plan: 'enterprise', name: 'bench', perMinute: 100_000_000, perDay: 999_999_999, maxOpenOrders });
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
  const drop = async () => {
    await pool.end().catch(() => {});
    await dropDatabase(adminUrl, name);
  };
  rememberDatabase(adminUrl, name, drop);
  await pool.query(
    `INSERT INTO pets (name, category_id, status)
     SELECT 'Pet ' || i, 1 + i % 50, (ARRAY['available', 'pending', 'sold'])[1 + i % 3] FROM generate_series(1, $1::int) AS i`,
    [pets],
  );
  const owner = (await pool.query<{ id: number }>(`SELECT account_id::int AS id FROM api_keys WHERE name = 'bench'`)).rows[0]!.id;
  const firstOwned = (await pool.query<{ first: number }>(
    `WITH added AS (INSERT INTO pets (name, category_id, status, created_by) SELECT 'Owned ' || i, 1, 'available', $2 FROM generate_series(1, $1::int) AS i RETURNING id)
     SELECT min(id)::int AS first FROM added`,
    [owned, owner],
  )).rows[0]!.first;
  const { rows } = await pool.query<{ first: number }>(
    `WITH added AS (INSERT INTO pets (name, category_id, status) SELECT 'Orderable ' || i, 1, 'available' FROM generate_series(1, $1::int) AS i RETURNING id)
     SELECT min(id)::int AS first FROM added`,
    [orderable],
  );
  const first = rows[0]!.first;
  // The pet and its order in one statement: the store refuses a pending pet without a placed order.
  await pool.query(
    `WITH pending AS (UPDATE pets SET status = 'pending' WHERE id >= $2 AND id < $2 + $3 RETURNING id)
     INSERT INTO orders (pet_id, account_id) SELECT id, $1 FROM pending`,
    [owner, first, placed],
  );
  await pool.query('ANALYZE pets; ANALYZE orders');
  let next = first + placed;
  const last = first + orderable - 1;
  let patches = 0;
  return {
    env,
    key,
    owner,
    maxOpenOrders,
    nextPet: () => {
      if (next > last) throw new Error(`all ${orderable} orderable pets are ordered: seed more`);
      return next++;
    },
    // A status change takes updatePet's longest path (the order that may hold the status is looked up).
    nextPatch: () => {
      const round = Math.floor(patches / owned);
      const path = String(firstOwned + (patches++ % owned));
      return { path, body: JSON.stringify({ name: `Renamed ${round}`, status: round % 2 ? 'available' : 'sold' }) };
    },
    drop,
  };
}

import { execFile } from 'node:child_process';
import pg from 'pg';
import { CONFIG_VARIABLES } from '../src/config.js';
import { projectRoot } from '../src/paths.js';
import { LIST } from '../src/pets/sql.js';
import { createDatabase, dropDatabase, rememberDatabase } from '../test/helpers/databases.js';

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
  /** ANALYZE of every table (autovacuum may be off): after seeding, and again once the run has set up what it adds (its webhook endpoint). */
  analyze(): Promise<void>;
  /** The plan listPets limit=20 gets (EXPLAIN of src/pets/sql.ts LIST), on one line. */
  listPlan(): Promise<string>;
  drop(): Promise<void>;
}

/**
 * Runs a TypeScript script of the checkout at `root` as its npm script does (through tsx, from
 * that checkout), with the service's settings only as given in `env`, as test/helpers' runScript does.
 */
function runIn(root: string, script: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const inherited = Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name));
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, env: { ...Object.fromEntries(inherited), ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ code: !err ? 0 : typeof code === 'number' ? code : 1, stdout, stderr });
    });
  });
}

/**
 * A new database on the server of `adminUrl`, migrated as an operator does it (npm run migrate),
 * with `pets` pets in turn available, pending and sold, `owned` available pets of the
 * benchmark's account for updatePet, then `orderable` available pets for placeOrder to take
 * one each, and `placed` orders of the benchmark's account for listOrders; then ANALYZEd.
 * `root`: the checkout whose migrations and `npm run apikey` make the schema and the key (the
 * baseline build's, for its own database); by default this one.
 */
export async function createBenchDatabase(
  adminUrl: string,
  name: string,
  { pets, owned, orderable, placed }: Record<'pets' | 'owned' | 'orderable' | 'placed', number>,
  { root = projectRoot }: { root?: string } = {},
): Promise<BenchDatabase> {
  const env = { DATABASE_URL: await createDatabase(adminUrl, name) };
  const migrated = await runIn(root, 'scripts/migrate.ts', [], env);
  if (migrated.code !== 0) throw new Error(`npm run migrate (in ${root}) exited with ${migrated.code}:\n${migrated.stderr}`);
  const maxOpenOrders = placed + orderable;
  // An enterprise key whose limits no run reaches (npm run apikey -- create).
  const keyArgs = ['create', '--plan', 'enterprise', '--name', 'bench', '--per-minute', '100000000', '--per-day', '999999999', '--open-orders', String(maxOpenOrders)];
  const created = await runIn(root, 'scripts/apikey.ts', keyArgs, env);
  if (created.code !== 0) throw new Error(`npm run apikey -- ${keyArgs.join(' ')} (in ${root}) exited with ${created.code}:\n${created.stderr}`);
  const key = created.stdout.trim().split('\n').at(-1)!;
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
  // Every table, not only those seeded: with autovacuum off nothing else would ever gather
  // statistics (events, event_recipients, webhook_endpoints, api_keys, pg-boss's tables…).
  const analyze = async () => void (await pool.query('ANALYZE'));
  await analyze();
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
    analyze,
    listPlan: async () => {
      const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${LIST}`, [0, 21, new Date()]);
      return rows.map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, '')).join(' → ');
    },
    drop,
  };
}

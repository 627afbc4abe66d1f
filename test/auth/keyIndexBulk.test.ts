import { createHash } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { accountsRepository, type KeyChanges } from '../../src/accounts/repository.js';
import { createPool } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const BULK = 200_000;
const prefixOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 13);

/** A connection of its own, outside any pool's bound on how long a checkout may last. */
async function connect(db: TestDatabase): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await client.connect();
  return client;
}

/**
 * Counts the keys each read of the server's index returns: its refreshes run when the test
 * advances the faked setInterval, and each is awaited to its answer.
 */
function watchIndexReads(server: TestServer) {
  const pool = server.app.database.pool;
  const reads: Array<Promise<number>> = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
  vi.spyOn(pool, 'query').mockImplementation(((...args: unknown[]) => {
    const result = query(...args);
    if (typeof args[0] === 'string' && args[0].includes('pg_current_snapshot()')) reads.push(result.then((r) => (r.rows[0] as KeyChanges).active.length));
    return result;
  }) as never);
  return async function refresh(): Promise<number> {
    const n = reads.length;
    await vi.advanceTimersByTimeAsync(500);
    expect(reads, 'one read per refresh').toHaveLength(n + 1);
    return reads[n]!;
  };
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('a bulk change to the keys costs each instance one read', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ poolMax: 2, databaseUrl: db.env.DATABASE_URL, connection: { connectionString: db.env.DATABASE_URL } }).on('error', () => {});
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('200,000 keys inserted at once are read once, by the repository and a running server, even while an older transaction stays open', async () => {
    // Only setInterval is faked: the server's index refreshes when the test says, nothing else waits.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const server = await startTestServer({}, { db });
    const older = await connect(db);
    const admin = await connect(db);
    try {
      const refresh = watchIndexReads(server);
      expect(await refresh(), "the server's own key, made after its first read").toBe(1);
      const repo = accountsRepository(pool);
      const { accountId } = await repo.createAccount({ plan: 'free' });
      // A write transaction begun before the insert, open after it (a long job, an idle psql session):
      // reading from the oldest running transaction on read the insert again at every refresh.
      await older.query('BEGIN');
      await older.query('SELECT pg_current_xact_id()');
      const before = await repo.changesSince(null);
      expect(before.active).toHaveLength(2);
      expect(await refresh(), 'the account made just now').toBe(1);

      // One statement, as an operator's import would; sorted, so that the hash index takes it in order (quicker).
      await admin.query(
        `INSERT INTO api_keys (account_id, key_hash, prefix, name, scopes)
         SELECT $1, h, 'ask_', '', '{pets:read}'
           FROM (SELECT encode(sha256(convert_to('bulk-' || g, 'UTF8')), 'hex') AS h FROM generate_series(1, ${BULK}) AS g) AS keys ORDER BY h`,
        [accountId],
      );
      const first = await repo.changesSince(before.snapshot);
      expect(first.active).toHaveLength(BULK);
      expect(first.active).toContain(prefixOf('bulk-1'));
      expect(first.active).toContain(prefixOf(`bulk-${BULK}`));
      expect(await refresh()).toBe(BULK);

      const again = await repo.changesSince(first.snapshot);
      expect(again.active).toEqual([]);
      expect([await refresh(), await refresh(), await refresh()]).toEqual([0, 0, 0]);
      await older.query('COMMIT');
      expect((await repo.changesSince(again.snapshot)).active).toEqual([]);
      expect(await refresh()).toBe(0);

      // A real key still answers, and a key made now is known at once.
      expect((await server.request('/v1/pets')).status).toBe(200);
      expect((await server.request('/v1/pets', { key: await server.createKey('free') })).status).toBe(200);
    } finally {
      await older.end();
      await admin.end();
      vi.restoreAllMocks();
      await server.close();
    }
  }, 180_000); // seconds of Postgres work on a quiet machine; a minute and more at load 20

  it('keys revoked and made by a transaction running at one read are read at the next, once', async () => {
    const repo = accountsRepository(pool);
    const { accountId, key } = await repo.createAccount({ plan: 'free' });
    const late = await connect(db);
    try {
      await late.query('BEGIN');
      await late.query(`UPDATE api_keys SET revoked_at = now(), changed_xid = pg_current_xact_id() WHERE id = $1`, [key.id]);
      await late.query(`INSERT INTO api_keys (account_id, key_hash, prefix, scopes) VALUES ($1, $2, 'ask_', '{pets:read}')`, [accountId, 'f'.repeat(64)]);
      const during = await repo.changesSince(null);
      expect(during.active).not.toContain('f'.repeat(13));
      await late.query('COMMIT');
      const after = await repo.changesSince(during.snapshot);
      expect(after.active).toEqual(['f'.repeat(13)]);
      expect((await repo.changesSince(after.snapshot)).active).toEqual([]);
    } finally {
      await late.end();
    }
  });
});

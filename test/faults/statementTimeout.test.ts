import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

/** A lock held by another session on a real Postgres server, longer than the service's statement timeout. */
const POOL = 4;
let db: ServerDatabase;
let server: TestServer;
beforeAll(async () => {
  db = await createServerDatabase('stmt');
  server = await startTestServer({ DB_POOL_MAX: String(POOL), DB_STATEMENT_TIMEOUT_MS: '1000', DB_LOCK_TIMEOUT_MS: '500' }, { db });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

async function holdPetsLock(ms: number): Promise<() => Promise<void>> {
  const locker = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
  const timer = setTimeout(() => void locker.query('ROLLBACK'), ms);
  return async () => {
    clearTimeout(timer);
    await locker.query('ROLLBACK').catch(() => {});
    await locker.end();
  };
}

async function serviceBackends(): Promise<number> {
  const { rows } = await db.admin.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'animal-store'`,
    [db.name],
  );
  return rows[0]!.n;
}

describe('statements blocked past the timeout', () => {
  it('answer 503 within 15 s, store nothing, and never take more backends than the pool', async () => {
    const release = await holdPetsLock(8_000);
    let maxBackends = 0;
    const sampler = setInterval(() => void serviceBackends().then((n) => (maxBackends = Math.max(maxBackends, n))), 100);
    const started = Date.now();
    const answers = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => answered(server.api.POST('/pets', { body: { name: `blocked ${i}`, categoryId: 1 } }))),
      ...Array.from({ length: 2 }, (_, i) => answered(server.api.POST('/pets', { body: { name: `keyed ${i}`, categoryId: 1 }, params: { header: { 'Idempotency-Key': `blocked-${i}` } } }))),
    ]);
    const elapsed = Date.now() - started;
    clearInterval(sampler);
    await release();

    expect(elapsed).toBeLessThan(15_000);
    for (const res of answers) {
      expect(res.status).toBe(503); // a lock timeout is the database's fault, not an idempotency conflict
      expect(res.body.code).toBe('service_unavailable');
    }
    expect((await server.app.database.pool.query('SELECT count(*)::int AS n FROM pets')).rows[0].n).toBe(0);
    expect(maxBackends).toBeLessThanOrEqual(POOL);
    const { rows: keys } = await server.app.database.pool.query('SELECT count(*)::int AS n FROM idempotency_keys');
    expect(keys[0].n).toBe(0);
  });

  it('answers 409 only to a real twin: a request with a key whose first request is still running', async () => {
    // The first request with the key, as the database sees it while it runs: its claim, not yet committed.
    const twin = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await twin.connect();
    const { rows } = await twin.query<{ id: number }>('SELECT id FROM api_keys ORDER BY id LIMIT 1');
    await twin.query('BEGIN');
    await twin.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, response_body) VALUES ($1, 'twin-1', 'x', 0, 'null')`,
      [rows[0]!.id],
    );
    const second = await answered(server.api.POST('/pets', { body: { name: 'Twin', categoryId: 1 }, params: { header: { 'Idempotency-Key': 'twin-1' } } }));
    await twin.query('ROLLBACK');
    await twin.end();
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('idempotency_key_in_use');

    // The twin gave up: the key is free again.
    const retry = await answered(server.api.POST('/pets', { body: { name: 'Twin', categoryId: 1 }, params: { header: { 'Idempotency-Key': 'twin-1' } } }));
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { waitFor } from '../helpers/poll.js';
import { startServer } from '../helpers/processes.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

let db: ServerDatabase;
let key: string;
beforeAll(async () => {
  db = await createServerDatabase('creates');
  key = await unlimitedKey(db.env);
});
afterAll(() => db?.drop());

const count = async (table: string) => (await db.admin.query(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n as number;

describe('creates under a burst', () => {
  let pets: pg.Client;
  beforeAll(async () => {
    pets = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await pets.connect();
  });
  afterAll(() => pets?.end());
  const stored = async (sql: string) => (await pets.query(sql)).rows[0].n as number;

  // The instance has just started: its pool holds no connection yet for these 150.
  it.each([1, 2, 3])('150 concurrent keyed creates right after start (start %i): 150 × 201, each stored once', async () => {
    const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'warn' }, { readyPath: '/readyz', stdout: 'ignore' });
    onTestFinished(async () => void (await server.stop()));
    const petsBefore = await stored('SELECT count(*)::int AS n FROM pets');
    const keysBefore = await stored('SELECT count(*)::int AS n FROM idempotency_keys');
    const run = `${Date.now()}`;
    const create = (i: number) =>
      fetch(`${server.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': `burst-${run}-${i}` },
        body: JSON.stringify({ name: `burst ${i}`, categoryId: 1 }),
      }).then(
        async (res) => `${res.status}${res.status >= 400 ? ` ${((await res.json()) as { code: string }).code}` : (await res.arrayBuffer(), '')}`,
        (err: Error & { cause?: { code?: string } }) => `error ${err.cause?.code ?? err.message}`,
      );
    const started = Date.now();
    const outcomes = await Promise.all(Array.from({ length: 150 }, (_, i) => create(i)));
    const ms = Date.now() - started;
    const counts = outcomes.reduce<Record<string, number>>((acc, o) => ({ ...acc, [o]: (acc[o] ?? 0) + 1 }), {});
    console.log(`burst after start: ${JSON.stringify(counts)} in ${ms} ms`);
    expect(counts).toEqual({ 201: 150 });
    expect((await stored('SELECT count(*)::int AS n FROM pets')) - petsBefore).toBe(150);
    expect((await stored('SELECT count(*)::int AS n FROM idempotency_keys')) - keysBefore).toBe(150);
  }, 120_000);
});

describe('a request that finds every database connection busy', () => {
  it('is answered 503 overloaded with Retry-After once the pool wait (3 s) is over, logged once for the lot', async () => {
    // One connection, held by a create that waits on a table lock for 4 s (past the pool's 3 s wait).
    const server = await startServer(
      'src/server.ts',
      { ...db.env, LOG_LEVEL: 'warn', DB_POOL_MAX: '1', DB_LOCK_TIMEOUT_MS: '4000', DB_STATEMENT_TIMEOUT_MS: '6000' },
      { readyPath: '/readyz' },
    );
    onTestFinished(async () => void (await server.stop()));
    let stdout = '';
    server.child.stdout!.on('data', (chunk) => (stdout += chunk));
    const get = () => fetch(`${server.baseUrl}/v1/pets/1`, { headers: { authorization: `Bearer ${key}` } });
    expect([200, 404]).toContain((await get()).status); // the key is verified and cached

    const locker = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await locker.connect();
    onTestFinished(() => locker.end());
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE pets IN ACCESS EXCLUSIVE MODE');
    const blocked = fetch(`${server.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'blocked', categoryId: 1 }),
    });
    await new Promise((r) => setTimeout(r, 200)); // it has the connection
    const waiting = await Promise.all(Array.from({ length: 10 }, get));
    await locker.query('ROLLBACK');
    expect((await blocked).status).toBe(201); // the lock released within its 4 s: it goes through

    for (const res of waiting) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(await res.json()).toEqual({ code: 'overloaded', message: expect.any(String), status: 503 });
    }
    const lines = () =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; count: number; err?: string; stack?: unknown })
        .filter((l) => /answering 503 overloaded/.test(l.msg));
    expect(await waitFor(() => lines().length > 0, 5000)).toBe(true); // lines are written in batches
    expect(lines()).toHaveLength(1); // the other 9 are counted toward the next line
    expect(lines()[0]).toMatchObject({ count: 1, err: 'timeout exceeded when trying to connect' });
    expect(JSON.stringify(lines()[0])).not.toMatch(/at .*\.(ts|js):\d+/); // no stack
  }, 60_000);
});

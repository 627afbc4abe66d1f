import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { KEY_USAGE_FLUSH_MS } from '../../src/limits.js';
import { manualClock } from '../helpers/clock.js';
import { createTestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const WRITES_KEYS = /\b(UPDATE|INSERT INTO|DELETE FROM)\s+api_keys\b/i;
const textOf = (arg: unknown) => (typeof arg === 'string' ? arg : ((arg as { text?: string } | undefined)?.text ?? ''));

/** Every statement that writes to api_keys on any connection of this process (pooled, or a transaction's). */
function watchAllKeyWrites(): string[] {
  const writes: string[] = [];
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
    if (WRITES_KEYS.test(textOf(args[0]))) writes.push(textOf(args[0]));
    return query.apply(this, args);
  } as never);
  return writes;
}

/** The statements writing to api_keys through the server's pool, as they are issued (the key usage's flush), each with its row count. */
function watchPoolKeyWrites(server: TestServer) {
  const pool = server.app.database.pool;
  const writes: Array<{ sql: string; rows: Promise<number | null> }> = [];
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
  vi.spyOn(pool, 'query').mockImplementation(((...args: unknown[]) => {
    const result = query(...args);
    if (WRITES_KEYS.test(textOf(args[0]))) writes.push({ sql: textOf(args[0]), rows: result.then((r) => r.rowCount) });
    return result;
  }) as never);
  return writes;
}

/** A business account with three keys. */
async function threeKeys(server: TestServer) {
  const { accountId, key } = await server.app.accounts.createAccount({ plan: 'business' });
  const more = [];
  for (const name of ['two', 'three']) more.push((await server.app.accounts.createKey(accountId, { name, scopes: SCOPES }))!);
  return [key, ...more];
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('lastUsedAt', () => {
  it('adds no write to a request: one UPDATE for every key used, at the flush, then shown by listApiKeys', async () => {
    const clock = manualClock();
    const server = await startTestServer({}, { clock: clock.now });
    try {
      const keys = await threeKeys(server);
      const all = watchAllKeyWrites();
      const writes = watchPoolKeyWrites(server);
      for (let i = 0; i < 30; i++) {
        const res = await server.request('/v1/pets', { key: keys[i % 2]!.secret });
        expect(res.status).toBe(200);
      }
      // A write request too (a pet, and its Idempotency-Key's transaction).
      const created = await server.request('/v1/pets', { key: keys[0]!.secret, body: { name: 'Rex', categoryId: 1 }, headers: { 'idempotency-key': 'k1' } });
      expect(created.status).toBe(201);
      expect(all, 'writes to api_keys on the request path').toEqual([]);

      clock.advance(1_234);
      const usedAt = new Date(clock.now()).toISOString();
      expect((await server.request('/v1/pets', { key: keys[1]!.secret })).status).toBe(200);
      await server.app.flushKeyUsage();
      expect(writes).toHaveLength(1);
      expect(writes[0]!.sql).toMatch(/^UPDATE api_keys/);
      expect(await writes[0]!.rows, 'both keys used, in one statement').toBe(2);
      expect(all).toHaveLength(1);
      await server.app.flushKeyUsage();
      expect(writes, 'nothing used since: nothing written').toHaveLength(1);

      const listed = await server.request('/v1/account/api-keys', { key: keys[2]!.secret });
      expect(listed.body.map((k: { name: string; lastUsedAt: string | null }) => [k.name, k.lastUsedAt])).toEqual([
        ['', expect.stringMatching(/^\d{4}-/)],
        ['two', usedAt],
        ['three', null], // its own use, by this very request, is written at the next flush
      ]);
      expect(Date.parse(listed.body[0].lastUsedAt)).toBeLessThan(Date.parse(usedAt));
    } finally {
      await server.close();
    }
  });

  it('is written once per interval (60 s), not per request', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const server = await startTestServer({});
    try {
      const [key] = await threeKeys(server);
      const writes = watchPoolKeyWrites(server);
      for (let i = 0; i < 5; i++) expect((await server.request('/v1/pets', { key: key!.secret })).status).toBe(200);
      await vi.advanceTimersByTimeAsync(KEY_USAGE_FLUSH_MS - 1);
      expect(writes).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(writes).toHaveLength(1);
      expect(await writes[0]!.rows).toBe(1);
      for (let i = 0; i < 5; i++) expect((await server.request('/v1/pets', { key: key!.secret })).status).toBe(200);
      await vi.advanceTimersByTimeAsync(KEY_USAGE_FLUSH_MS);
      expect(writes).toHaveLength(2);
      expect(await writes[1]!.rows).toBe(1);
    } finally {
      vi.restoreAllMocks();
      await server.close();
    }
  });

  it('still to be written when the server closes is written before its database closes', async () => {
    const clock = manualClock();
    const db = await createTestDatabase();
    try {
      const server = await startTestServer({}, { db, clock: clock.now });
      const [key] = await threeKeys(server);
      expect((await server.request('/v1/pets', { key: key!.secret })).status).toBe(200);
      await server.close();
      const reader = new pg.Client({ connectionString: db.env.DATABASE_URL });
      await reader.connect();
      try {
        const { rows } = await reader.query('SELECT last_used_at FROM api_keys WHERE id = $1', [key!.id]);
        expect(rows).toEqual([{ last_used_at: new Date(clock.now()) }]);
      } finally {
        await reader.end();
      }
    } finally {
      await db.drop();
    }
  });
});

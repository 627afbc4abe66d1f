import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { awayFromMinuteBoundary, cleanupSharedRedis, REDIS_URL, uniquePrefix } from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe('two instances sharing Redis', () => {
  let db: TestDatabase;
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { REDIS_URL, REDIS_PREFIX: uniquePrefix() };
    a = await startTestServer(env, db);
    // An embedded (PGlite) store has one owner, which serves it on a Unix socket in its data
    // directory: the second instance connects to that socket, as to any shared Postgres.
    const viaSocket: Record<string, string> = db.env.DATABASE_URL
      ? {}
      : { DATABASE_URL: `postgres://postgres@localhost:5432/postgres?host=${encodeURIComponent(db.env.DATA_DIR!)}` };
    b = await startTestServer({ ...env, ...viaSocket }, db);
  });
  afterAll(async () => {
    await b?.close(); // first: with PGlite, `a` serves the database `b` uses
    await a?.close();
    await db?.drop();
  });

  it('admit exactly one quota between them: 120 concurrent requests of a free key give 60 × 200 and 60 × 429', async () => {
    await awayFromMinuteBoundary();
    const key = await a!.createKey('free');
    expect((await b!.app.apiKeys.list()).map((k) => k.plan)).toContain('free'); // one database
    const responses = await Promise.all(
      Array.from({ length: 120 }, (_, i) => (i % 2 === 0 ? a! : b!).request('/v1/pets?limit=1', { key })),
    );
    const count = (status: number) => responses.filter((r) => r.status === status).length;
    expect({ 200: count(200), 429: count(429) }).toEqual({ 200: 60, 429: 60 });
    // Refusals are shared too: the default ban (more than 10 refused in a minute) starts on the 11th.
    const codes = responses.filter((r) => r.status === 429).map((r) => r.body.code as string);
    expect(codes.filter((c) => c === 'rate_limited').length).toBe(10);
    expect(codes.filter((c) => c === 'temporarily_banned').length).toBe(50);
  }, 90_000);
});

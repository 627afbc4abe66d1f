import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

/** The database goes away for longer than the key cache (2 s) while a paying key keeps calling. */
let db: ServerDatabase;
let server: TestServer;
const clock = manualClock();
beforeAll(async () => {
  db = await createServerDatabase('keyoutage');
  server = await startTestServer({}, { db, clock: clock.now });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe('a database outage longer than the key cache', () => {
  it('answers a valid key 503 with Retry-After throughout, never 429, and 200 soon after recovery', async () => {
    const key = await server.createKey('pro');
    expect((await answered(server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } }))).status).toBe(200);

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db.name]);
    const answers = [];
    for (let i = 0; i < 9; i++) {
      // 90 requests over 10 s of the service's time: well past the 2 s the key is cached.
      answers.push(...(await Promise.all(Array.from({ length: 10 }, () => answered(server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } }))))));
      clock.advance(1_100);
    }
    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);

    const byStatus = answers.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
    expect(byStatus).toEqual({ 503: 90 });
    for (const res of answers) {
      expect(res.body.code).toBe('service_unavailable');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }

    const started = Date.now();
    let after = await answered(server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } }));
    while (after.status !== 200 && Date.now() - started < 10_000) {
      await new Promise((r) => setTimeout(r, 200));
      after = await answered(server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } }));
    }
    expect(after.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

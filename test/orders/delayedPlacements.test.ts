import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatusesAgree, petStatus } from '../helpers/orders.js';
import { startPgProxy, type PgProxy } from '../helpers/pgProxy.js';
import { createPet, placeOrder, tally } from '../helpers/pets.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * A database one network hop away (issue 45): the service reaches Postgres through a proxy that
 * holds each round trip back 1 ms. A placement is one call (migration 018) that takes its account's
 * lock and counts after it, so the cap stays exact however long the way to the database is.
 */
let db: TestDatabase;
let proxy: PgProxy;
let server: TestServer;
beforeAll(async () => {
  db = await createTestDatabase();
  const url = new URL(db.env.DATABASE_URL!);
  proxy = await startPgProxy({ host: url.hostname, port: Number(url.port || 5432) }, 1);
  url.host = `127.0.0.1:${proxy.port}`;
  server = await startTestServer({ DATABASE_URL: url.toString(), DB_POOL_MAX: '32', DB_POOL_WAIT_MS: '60000' }, { db });
});
afterAll(async () => {
  await server?.close();
  await proxy?.close();
  await db?.drop();
});

describe('placements through a delayed connection', () => {
  it('32 concurrent placements by one free account leave exactly its cap placed: 3 × 201, 29 × 409', async () => {
    const key = await server.createKey('free');
    const pets = await Promise.all(Array.from({ length: 32 }, async (_, i) => (await createPet(server, { name: `Far ${i}` })).id));
    const before = proxy.stats.roundTrips;
    const answers = await Promise.all(pets.map((petId) => placeOrder(server, petId, key)));
    expect(tally(answers)).toEqual({ '201': 3, '409 too_many_open_orders': 29 });
    // They went through the proxy.
    expect(proxy.stats.roundTrips - before).toBeGreaterThanOrEqual(32);
    const accountId = (await server.request('/v1/account', { key })).body.id;
    const placed = await server.app.database.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders WHERE account_id = $1 AND status = 'placed'`, [accountId]);
    expect(placed.rows[0]!.n).toBe(3);
    const won = answers.map((a) => a.status === 201);
    expect(await Promise.all(pets.map((petId) => petStatus(server, petId)))).toEqual(won.map((w) => (w ? 'pending' : 'available')));
    await expectStatusesAgree(server.app.database.pool);
  });
});

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPet, expectStatusesAgree, orderCount, petStatus } from '../helpers/orders.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

/**
 * Orders when the database fails them: a statement held past the lock timeout by another
 * session, and the database refusing connections. Every failure is a 503 with Retry-After,
 * and nothing a 503 answered was committed, not even half of a transition.
 */
let db: ServerDatabase;
let server: TestServer;
beforeAll(async () => {
  db = await createServerDatabase('orders');
  server = await startTestServer({ DB_POOL_MAX: '4', DB_STATEMENT_TIMEOUT_MS: '1000', DB_LOCK_TIMEOUT_MS: '500' }, { db });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

/** Another session holding one row's lock (FOR UPDATE) until released. */
async function holdRow(table: 'pets' | 'orders', id: number): Promise<() => Promise<void>> {
  const locker = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
  return async () => {
    await locker.query('ROLLBACK').catch(() => {});
    await locker.end();
  };
}

const orderRow = async (id: number) =>
  (await server.app.database.pool.query('SELECT status, updated_at FROM orders WHERE id = $1', [id])).rows[0];

const path = (orderId: number) => ({ params: { path: { orderId } } });

function expect503(res: { status: number; headers: Headers; body: { code?: string } }) {
  expect(res.status).toBe(503);
  expect(res.body.code).toBe('service_unavailable');
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(res.headers.get('api-stability')).toBe('experimental');
}

describe('orders blocked past the lock timeout', () => {
  it.each([
    ['complete', 'pets'],
    ['complete', 'orders'],
    ['cancel', 'pets'],
    ['cancel', 'orders'],
  ] as const)('a %s held up on the %s row answers 503 and commits nothing; it succeeds afterwards', async (action, table) => {
    const petId = await addPet(server);
    const { data: order } = await server.api.POST('/store/orders', { body: { petId } });
    const before = await orderRow(order!.id);

    const release = await holdRow(table, table === 'pets' ? petId : order!.id);
    const started = Date.now();
    const failed = await answered(server.api.POST(`/store/orders/{orderId}/${action}`, path(order!.id)));
    const elapsed = Date.now() - started;
    await release();

    expect(elapsed).toBeLessThan(15_000);
    expect503(failed);
    // Neither half of the transition happened: the order and its pet are as they were.
    expect(await orderRow(order!.id)).toEqual(before);
    expect(await petStatus(server, petId)).toBe('pending');
    await expectStatusesAgree(server.app.database.pool);

    const retried = await answered(server.api.POST(`/store/orders/{orderId}/${action}`, path(order!.id)));
    expect([retried.status, retried.body.status]).toEqual([200, action === 'complete' ? 'completed' : 'cancelled']);
    expect(await petStatus(server, petId)).toBe(action === 'complete' ? 'sold' : 'available');
  });

  it('a placement held up on its pet answers 503, with or without an Idempotency-Key, and leaves no order and no saved key', async () => {
    const petId = await addPet(server);
    const before = await orderCount(server);
    const release = await holdRow('pets', petId);
    const plain = await answered(server.api.POST('/store/orders', { body: { petId } }));
    const keyed = await answered(server.api.POST('/store/orders', { body: { petId }, params: { header: { 'Idempotency-Key': 'held-1' } } }));
    await release();

    expect503(plain);
    expect503(keyed); // a lock timeout is the database's fault, not an idempotency conflict
    expect(await orderCount(server)).toBe(before);
    expect(await petStatus(server, petId)).toBe('available');
    const { rows } = await server.app.database.pool.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'held-1'`);
    expect(rows[0].n).toBe(0);

    // The key was never saved: the retry places the order, not a replay of the 503.
    const retried = await answered(server.api.POST('/store/orders', { body: { petId }, params: { header: { 'Idempotency-Key': 'held-1' } } }));
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });
});

describe('orders while the database refuses connections', () => {
  it('answer 503 with Retry-After for every order operation, change nothing, and work again once it is back', async () => {
    const held = await addPet(server);
    const { data: order } = await server.api.POST('/store/orders', { body: { petId: held } });
    const free = await addPet(server);
    const before = { orders: await orderCount(server), order: await orderRow(order!.id) };

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
    let answers;
    try {
      answers = [
        await answered(server.api.POST('/store/orders', { body: { petId: free } })),
        await answered(server.api.GET('/store/orders')),
        await answered(server.api.GET('/store/orders/{orderId}', path(order!.id))),
        await answered(server.api.POST('/store/orders/{orderId}/complete', path(order!.id))),
        await answered(server.api.POST('/store/orders/{orderId}/cancel', path(order!.id))),
      ];
    } finally {
      await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    }
    for (const res of answers) {
      expect503(res);
      expect(res.text).not.toMatch(/allow connections|postgres|5432/i);
    }

    expect(await orderCount(server)).toBe(before.orders);
    expect(await orderRow(order!.id)).toEqual(before.order);
    expect([await petStatus(server, held), await petStatus(server, free)]).toEqual(['pending', 'available']);
    const completed = await answered(server.api.POST('/store/orders/{orderId}/complete', path(order!.id)));
    expect([completed.status, completed.body.status]).toEqual([200, 'completed']);
    await expectStatusesAgree(server.app.database.pool);
  });
});

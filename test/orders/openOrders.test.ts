import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatusesAgree, petStatus } from '../helpers/orders.js';
import { createPet, placeOrder, tally } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** No hoarding: an account holds at most its plan's number of placed orders at once. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' });
});
afterAll(() => server.close());

/** `n` available pets, added by the server's own account. */
const availablePets = (n: number) => Promise.all(Array.from({ length: n }, async (_, i) => (await createPet(server, { name: `Wanted ${i}` })).id));

const TOO_MANY = (n: number) => ({
  code: 'too_many_open_orders',
  message: `The account already holds ${n} placed orders, its plan's most; complete or cancel one first.`,
  status: 409,
});

const placedOrdersOf = async (key: string) => {
  const accountId = (await server.request('/v1/account', { key })).body.id;
  return (await server.app.database.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM orders WHERE account_id = $1 AND status = 'placed'`, [accountId])).rows[0]!.n;
};

describe('open orders per account', () => {
  it('a free account: 3 placed orders, the 4th 409 too_many_open_orders; after a cancel or a complete, one more', async () => {
    const key = await server.createKey('free');
    const pets = await availablePets(6);
    const orders: number[] = [];
    for (const petId of pets.slice(0, 3)) {
      const res = await placeOrder(server, petId, key);
      expect(res.status).toBe(201);
      orders.push(res.body.id);
    }
    const fourth = await placeOrder(server, pets[3]!, key);
    expect([fourth.status, fourth.body]).toEqual([409, TOO_MANY(3)]);
    expect(await petStatus(server, pets[3]!)).toBe('available');
    expect(await placedOrdersOf(key)).toBe(3);

    expect((await server.request(`/v1/store/orders/${orders[0]}/cancel`, { key, method: 'POST' })).status).toBe(200);
    expect((await placeOrder(server, pets[3]!, key)).status).toBe(201);
    expect((await placeOrder(server, pets[4]!, key)).body.code).toBe('too_many_open_orders');

    expect((await server.request(`/v1/store/orders/${orders[1]}/complete`, { key, method: 'POST' })).status).toBe(200);
    expect((await placeOrder(server, pets[4]!, key)).status).toBe(201);
    expect((await placeOrder(server, pets[5]!, key)).body.code).toBe('too_many_open_orders');
    expect(await placedOrdersOf(key)).toBe(3);
    await expectStatusesAgree(server.app.database.pool);
  });

  it("another account's orders do not count: a second free account still places 3", async () => {
    const [first, second] = await Promise.all([server.createKey('free'), server.createKey('free')]);
    const pets = await availablePets(6);
    for (const petId of pets.slice(0, 3)) expect((await placeOrder(server, petId, first)).status).toBe(201);
    for (const petId of pets.slice(3)) expect((await placeOrder(server, petId, second)).status).toBe(201);
  });

  it('10 concurrent placements by one fresh free account on 10 available pets: exactly 3 × 201 and 7 × 409', async () => {
    const key = await server.createKey('free');
    const pets = await availablePets(10);
    const answers = await Promise.all(pets.map((petId) => placeOrder(server, petId, key)));
    expect(tally(answers)).toEqual({ '201': 3, '409 too_many_open_orders': 7 });
    expect(await placedOrdersOf(key)).toBe(3);
    // The refused ones left their pets available; the placed ones are pending.
    const statuses = await Promise.all(pets.map((petId) => petStatus(server, petId)));
    const won = answers.map((a) => a.status === 201);
    expect(statuses).toEqual(won.map((w) => (w ? 'pending' : 'available')));
    await expectStatusesAgree(server.app.database.pool);
  });

  it('getAccount shows limits.openOrders: 3 on the free plan, 25 on pro, 250 on business', async () => {
    for (const [plan, n] of [['free', 3], ['pro', 25], ['business', 250]] as const) {
      const res = await server.request('/v1/account', { key: await server.createKey(plan) });
      expect([plan, res.status, res.body.limits.openOrders]).toEqual([plan, 200, n]);
    }
  });

  it('an enterprise account created with maxOpenOrders 2: getAccount shows 2, and it places exactly 2', async () => {
    const { key } = await server.app.accounts.createAccount({ plan: 'enterprise', perMinute: 600, perDay: 10_000, maxOpenOrders: 2 });
    const account = await server.request('/v1/account', { key: key.secret });
    expect(account.body.limits).toEqual({ perMinute: 600, perDay: 10_000, openOrders: 2 });
    const pets = await availablePets(3);
    const answers = [];
    for (const petId of pets) answers.push(await placeOrder(server, petId, key.secret));
    expect(answers.map((a) => a.status)).toEqual([201, 201, 409]);
    expect(answers[2]!.body).toEqual(TOO_MANY(2));
  });

  it('a limit set by configuration (OPEN_ORDERS_FREE=1) is the one applied and shown', async () => {
    const strict = await startTestServer({ OPEN_ORDERS_FREE: '1' }, { db: server.db });
    try {
      const key = await strict.createKey('free');
      expect((await strict.request('/v1/account', { key })).body.limits.openOrders).toBe(1);
      const pets = await availablePets(2);
      expect((await strict.request('/v1/store/orders', { key, body: { petId: pets[0] } })).status).toBe(201);
      expect((await strict.request('/v1/store/orders', { key, body: { petId: pets[1] } })).body).toEqual(TOO_MANY(1));
    } finally {
      await strict.close(); // the database is the shared one: left for the file's server
    }
  });
});

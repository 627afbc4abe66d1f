import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKey, newAccount, type TestKey } from '../helpers/accounts.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const path = (orderId: number) => ({ params: { path: { orderId } } });

/** A pet and an order for it, placed with `key`. */
async function placeOrder(key: TestKey) {
  const pet = await key.api.POST('/pets', { body: { name: 'Rex', categoryId: 1 } });
  expect(pet.response.status).toBe(201);
  const order = await key.api.POST('/store/orders', { body: { petId: pet.data!.id } });
  expect(order.response.status).toBe(201);
  return order.data!;
}

describe('orders belong to the account', () => {
  it("are seen and changed by every key of the account, and by no other account's", async () => {
    const a = await newAccount(server);
    const a2 = await addKey(server, a.id, ['orders:read', 'orders:write']);
    const b = await newAccount(server);
    const order = await placeOrder(a.first);

    const got = await a2.api.GET('/store/orders/{orderId}', path(order.id));
    expect(got.response.status).toBe(200);
    expect(got.data).toEqual(order);
    expect((await a2.api.GET('/store/orders')).data).toEqual([order]);

    const theirs = await b.first.api.GET('/store/orders/{orderId}', path(order.id));
    expect(theirs.response.status).toBe(404);
    expect(theirs.error).toEqual({ code: 'order_not_found', message: `Order ${order.id} not found.`, status: 404 });
    expect((await b.first.api.GET('/store/orders')).data).toEqual([]);
    const cancel = await b.first.api.POST('/store/orders/{orderId}/cancel', path(order.id));
    expect(cancel.response.status).toBe(404);

    // Another key of the account completes it; the one that placed it sees that.
    const completed = await a2.api.POST('/store/orders/{orderId}/complete', path(order.id));
    expect(completed.response.status).toBe(200);
    expect(completed.data!.status).toBe('completed');
    expect((await a.first.api.GET('/store/orders/{orderId}', path(order.id))).data).toEqual(completed.data);
  });

  it('stay with the account when the key that placed them is rolled away', async () => {
    const a = await newAccount(server);
    const placer = await addKey(server, a.id);
    const order = await placeOrder(placer);
    const rolled = await placer.api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: placer.id } }, body: { expiresInSeconds: 0 } });
    expect(rolled.response.status).toBe(201);
    const successor = await server.request('/v1/store/orders', { key: rolled.data!.secret });
    expect(successor.status).toBe(200);
    expect(successor.body).toEqual([order]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.js';
import { addPet, clientFor, expectStatusesAgree, petStatus } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered, type ApiClient } from '../helpers/typedClient.js';

type Order = components['schemas']['Order'];

/** Two API keys, A and B, each with orders of its own: neither sees nor changes the other's. */
let server: TestServer;
let a: ApiClient;
let b: ApiClient;
let aOrders: Order[];
let bOrders: Order[];

async function placeAs(client: ApiClient, petId: number): Promise<Order> {
  const { data, response } = await client.POST('/store/orders', { body: { petId } });
  expect(response.status).toBe(201);
  return data!;
}

beforeAll(async () => {
  server = await startTestServer();
  a = clientFor(server, await server.createKey('pro'));
  b = clientFor(server, await server.createKey('pro'));
  aOrders = [];
  bOrders = [];
  for (let i = 0; i < 3; i++) {
    aOrders.push(await placeAs(a, await addPet(server)));
    bOrders.push(await placeAs(b, await addPet(server)));
  }
});
afterAll(() => server.close());

const orderOf = async (id: number) => (await server.app.database.pool.query('SELECT status, updated_at FROM orders WHERE id = $1', [id])).rows[0];

describe('orders belong to the key that placed them', () => {
  it("answers another key's order with the very 404 an order that does not exist gets, for get, complete and cancel", async () => {
    const target = aOrders[0]!;
    const missing = 987_654_321;
    const before = await orderOf(target.id);
    const path = (orderId: number) => ({ params: { path: { orderId } } });
    const calls = [
      (id: number) => b.GET('/store/orders/{orderId}', path(id)),
      (id: number) => b.POST('/store/orders/{orderId}/complete', path(id)),
      (id: number) => b.POST('/store/orders/{orderId}/cancel', path(id)),
    ];
    for (const call of calls) {
      const theirs = await answered(call(target.id));
      const none = await answered(call(missing));
      expect(theirs.status).toBe(404);
      expect(theirs.body).toEqual({ code: 'order_not_found', message: `Order ${target.id} not found.`, status: 404 });
      // Nothing tells the two apart but the id in the message.
      expect(JSON.stringify(theirs.body).replace(String(target.id), 'N')).toBe(JSON.stringify(none.body).replace(String(missing), 'N'));
      expect([...theirs.headers.keys()].sort()).toEqual([...none.headers.keys()].sort());
    }
    // B's attempts changed nothing: A's order is as it was, its pet still pending.
    expect(await orderOf(target.id)).toEqual(before);
    expect(await petStatus(server, target.petId)).toBe('pending');
    expect((await a.GET('/store/orders/{orderId}', path(target.id))).data).toEqual(target);
  });

  it("lists only the caller's own orders, with every status filter and through every page", async () => {
    for (const [client, own] of [
      [a, aOrders],
      [b, bOrders],
    ] as const) {
      const seen: Order[] = [];
      let cursor: string | undefined;
      do {
        const { data, response } = await client.GET('/store/orders', { params: { query: { limit: 1, ...(cursor && { cursor }) } } });
        seen.push(...data!);
        cursor = new URL(/<([^>]+)>/.exec(response.headers.get('link') ?? '<http://x/>')![1]!).searchParams.get('cursor') ?? undefined;
      } while (cursor);
      expect(seen).toEqual(own);
      for (const status of ['placed', 'completed', 'cancelled'] as const) {
        const { data } = await client.GET('/store/orders', { params: { query: { status, limit: 100 } } });
        expect(data).toEqual(own.filter((o) => o.status === status));
      }
    }
  });

  it('lets each key change only its own: A completes and cancels its orders while B cannot', async () => {
    const path = (orderId: number) => ({ params: { path: { orderId } } });
    expect((await b.POST('/store/orders/{orderId}/complete', path(aOrders[1]!.id))).response.status).toBe(404);
    expect((await a.POST('/store/orders/{orderId}/complete', path(aOrders[1]!.id))).data?.status).toBe('completed');
    expect((await b.POST('/store/orders/{orderId}/cancel', path(aOrders[2]!.id))).response.status).toBe(404);
    expect((await a.POST('/store/orders/{orderId}/cancel', path(aOrders[2]!.id))).data?.status).toBe('cancelled');
    // B's own orders and listing are untouched by all this.
    expect((await b.GET('/store/orders', { params: { query: { limit: 100 } } })).data).toEqual(bOrders);
    await expectStatusesAgree(server.app.database.pool);
  });

  it("cannot place an order for a pet another key's order holds (pets are shared, orders are not)", async () => {
    const { error, response } = await b.POST('/store/orders', { body: { petId: aOrders[0]!.petId } });
    expect(response.status).toBe(409);
    expect(error?.code).toBe('pet_not_available');
  });

  it('keeps Idempotency-Keys per API key: the same key from A and B places two orders', async () => {
    const [petA, petB] = [await addPet(server), await addPet(server)];
    const header = { 'Idempotency-Key': 'shared-between-keys' };
    const fromA = await a.POST('/store/orders', { body: { petId: petA }, params: { header } });
    const fromB = await b.POST('/store/orders', { body: { petId: petB }, params: { header } });
    expect([fromA.response.status, fromB.response.status]).toEqual([201, 201]);
    expect(fromB.response.headers.get('idempotent-replayed')).toBeNull();
    expect(fromB.data!.id).not.toBe(fromA.data!.id);
    expect(fromB.data!.petId).toBe(petB);
  });
});

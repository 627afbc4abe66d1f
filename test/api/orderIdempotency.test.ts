import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPet, expectStatusesAgree, orderCount, petStatus } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** POST /v1/store/orders through the typed client with an Idempotency-Key. */
const place = (petId: number, idempotencyKey: string) =>
  server.api.POST('/store/orders', { body: { petId }, params: { header: { 'Idempotency-Key': idempotencyKey } } });

describe('Idempotency-Key on POST /v1/store/orders', () => {
  it('replays the original response for a retry with the same body, placing one order', async () => {
    const petId = await addPet(server);
    const before = await orderCount(server);
    const first = await place(petId, 'order-retry-1');
    const retry = await place(petId, 'order-retry-1');
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.response.status).toBe(201);
    expect(retry.response.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.response.headers.get('api-stability')).toBe('experimental');
    expect(retry.data).toEqual(first.data);
    expect(retry.response.headers.get('location')).toBe(first.response.headers.get('location'));
    expect(await orderCount(server)).toBe(before + 1);
  });

  it('replays the order as it was when placed, even after it moved on', async () => {
    const first = await place(await addPet(server), 'order-retry-2');
    await server.api.POST('/store/orders/{orderId}/complete', { params: { path: { orderId: first.data!.id } } });
    const retry = await place(first.data!.petId, 'order-retry-2');
    expect([retry.response.status, retry.data?.status]).toEqual([201, 'placed']);
    expect(retry.data).toEqual(first.data);
  });

  it('answers 422 for the same key with another body, and places nothing', async () => {
    const [petA, petB] = [await addPet(server), await addPet(server)];
    await place(petA, 'order-retry-3');
    const before = await orderCount(server);
    const { response, error } = await place(petB, 'order-retry-3');
    expect(response.status).toBe(422);
    expect(error?.code).toBe('idempotency_key_reused');
    expect(await orderCount(server)).toBe(before);
    expect(await petStatus(server, petB)).toBe('available');
  });

  it('does not save an error: a retry after 409 runs again, and succeeds once the pet is free', async () => {
    const petId = await addPet(server);
    const holder = await server.api.POST('/store/orders', { body: { petId } });
    const refused = await place(petId, 'order-retry-4');
    expect([refused.response.status, refused.error?.code]).toEqual([409, 'pet_not_available']);
    await server.api.POST('/store/orders/{orderId}/cancel', { params: { path: { orderId: holder.data!.id } } });
    const retry = await place(petId, 'order-retry-4');
    expect(retry.response.status).toBe(201);
    expect(retry.response.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.data?.petId).toBe(petId);
  });

  it('places exactly one order for 20 concurrent identical requests', async () => {
    const petId = await addPet(server);
    const before = await orderCount(server);
    const results = await Promise.all(Array.from({ length: 20 }, () => place(petId, 'order-race-1')));
    expect(results.map((r) => r.response.status)).toEqual(Array(20).fill(201));
    expect(new Set(results.map((r) => r.data!.id)).size).toBe(1);
    expect(results.filter((r) => r.response.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await orderCount(server)).toBe(before + 1);
    await expectStatusesAgree(server.app.database.pool);
  });

  it('keeps keys per operation: a key used for createPet and then for placeOrder names two requests', async () => {
    const pet = await server.api.POST('/pets', { body: { name: 'Keyed', categoryId: 1 }, params: { header: { 'Idempotency-Key': 'both-ops' } } });
    expect(pet.response.status).toBe(201);
    const order = await place(pet.data!.id, 'both-ops');
    expect(order.response.status).toBe(201); // not 422 for "another body", not the pet replayed
    expect(order.response.headers.get('idempotent-replayed')).toBeNull();
    expect(order.data).toMatchObject({ petId: pet.data!.id, status: 'placed' });
    // And each still replays its own.
    const petAgain = await server.api.POST('/pets', { body: { name: 'Keyed', categoryId: 1 }, params: { header: { 'Idempotency-Key': 'both-ops' } } });
    expect([petAgain.response.headers.get('idempotent-replayed'), petAgain.data]).toEqual(['true', pet.data]);
    const orderAgain = await place(pet.data!.id, 'both-ops');
    expect([orderAgain.response.headers.get('idempotent-replayed'), orderAgain.data]).toEqual(['true', order.data]);
    const { rows } = await server.app.database.pool.query(`SELECT operation FROM idempotency_keys WHERE key = 'both-ops' ORDER BY operation`);
    expect(rows).toEqual([{ operation: 'createPet' }, { operation: 'placeOrder' }]);
  });

  it('records the key in the same transaction as the order', async () => {
    const { data } = await place(await addPet(server), 'order-durable-1');
    const { rows } = await server.app.database.pool.query(
      `SELECT k.status, o.id, o.status AS "orderStatus" FROM idempotency_keys k JOIN orders o ON (k.response_body->>'id')::bigint = o.id
        WHERE k.key = 'order-durable-1' AND k.operation = 'placeOrder'`,
    );
    expect(rows).toEqual([{ status: 201, id: data!.id, orderStatus: 'placed' }]);
  });
});

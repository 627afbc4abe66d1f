import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, deletePet, newAccount, nextPath, patchPet, petRow, placeOrder, type TestAccount } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** A removed pet is gone from the API; the orders that named it keep their history. */
let server: TestServer;
let buyer: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  buyer = await newAccount(server);
});
afterAll(() => server.close());

/** Every pet id listPets shows, following rel="next" from `first`. */
async function listedIds(first: string): Promise<number[]> {
  const ids: number[] = [];
  for (let path: string | undefined = first; path; ) {
    const res = await server.request(path);
    expect(res.status).toBe(200);
    ids.push(...res.body.map((p: { id: number }) => p.id));
    path = nextPath(res.headers.get('link'));
  }
  return ids;
}

describe('DELETE /v1/pets/{petId} (deletePet)', () => {
  it('204 with no body; then getPet 404, listPets never shows it, placeOrder 404, a second delete 404', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) ids.push((await createPet(server, { name: `Pet ${i}`, categoryId: 30 + (i % 2) })).id);
    const removed = ids[3]!; // category 31, mid-list
    const res = await deletePet(server, removed);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');

    const read = await server.request(`/v1/pets/${removed}`);
    expect([read.status, read.body]).toEqual([404, { code: 'pet_not_found', message: `Pet ${removed} not found.`, status: 404 }]);
    const rest = ids.filter((id) => id !== removed);
    // Every filter, walked by pages of 2: the removed pet on none of them.
    expect(await listedIds('/v1/pets?limit=2')).toEqual(rest);
    expect(await listedIds('/v1/pets?limit=2&status=available')).toEqual(rest);
    expect(await listedIds('/v1/pets?limit=2&categoryId=31')).toEqual([ids[1], ids[5]]);
    expect(await listedIds('/v1/pets?limit=2&categoryId=31&status=available')).toEqual([ids[1], ids[5]]);

    const order = await placeOrder(server, removed, buyer.key);
    expect([order.status, order.body.code]).toEqual([404, 'pet_not_found']);
    const again = await deletePet(server, removed);
    expect([again.status, again.body]).toEqual([404, { code: 'pet_not_found', message: `Pet ${removed} not found.`, status: 404 }]);
    const patched = await patchPet(server, removed, { name: 'Back' });
    expect([patched.status, patched.body.code]).toEqual([404, 'pet_not_found']);
    // The row stays, hidden.
    expect(await petRow(server, removed)).toEqual({ name: 'Pet 3', status: 'available', version: 2, deleted: true });
  });

  it('an order that named it stays readable by its owner, with the same petId', async () => {
    const { id } = await createPet(server, { name: 'Adopted' });
    const placed = await placeOrder(server, id, buyer.key);
    expect(placed.status).toBe(201);
    const completed = await server.request(`/v1/store/orders/${placed.body.id}/complete`, { key: buyer.key, method: 'POST' });
    expect(completed.status).toBe(200);
    expect((await deletePet(server, id)).status).toBe(204);
    const order = await server.request(`/v1/store/orders/${placed.body.id}`, { key: buyer.key });
    expect(order.status).toBe(200);
    expect(order.body).toEqual(completed.body);
    expect(order.body).toMatchObject({ petId: id, status: 'completed' });
    const listed = await server.request('/v1/store/orders?status=completed', { key: buyer.key });
    expect(listed.body).toContainEqual(completed.body);
    expect((await server.request(`/v1/pets/${id}`)).status).toBe(404);
    await expectStatusesAgree(server.app.database.pool);
  });

  it('a pet whose only order was cancelled can be removed, and the cancelled order stays', async () => {
    const { id } = await createPet(server, { name: 'Returned' });
    const placed = await placeOrder(server, id, buyer.key);
    expect((await server.request(`/v1/store/orders/${placed.body.id}/cancel`, { key: buyer.key, method: 'POST' })).status).toBe(200);
    expect((await deletePet(server, id)).status).toBe(204);
    expect((await server.request(`/v1/store/orders/${placed.body.id}`, { key: buyer.key })).body).toMatchObject({ petId: id, status: 'cancelled' });
    await expectStatusesAgree(server.app.database.pool);
  });

  it('404 for a pet that never existed, and 400 for a petId out of range', async () => {
    expect((await deletePet(server, 987654321)).body.code).toBe('pet_not_found');
    for (const id of ['abc', '0', '9007199254740992']) {
      const res = await deletePet(server, id);
      expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
    }
  });
});

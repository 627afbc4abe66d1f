import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/http.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, deletePet, newAccount, petRow, placeOrder, tally } from '../helpers/pets.js';
import { holdPetRow } from '../helpers/rowLock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** A DELETE racing an order: the order exists and the delete was refused, or the pet is gone and the order was; never both, never neither. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' });
});
afterAll(() => server.close());

const ordersOf = async (petId: number) =>
  (await server.app.database.pool.query<{ id: number; status: string }>('SELECT id::int, status FROM orders WHERE pet_id = $1', [petId])).rows;

const doomed = async (i: number) => ({ petId: (await createPet(server, { name: `Doomed ${i}` })).id, buyer: (await newAccount(server)).key });

/** Exactly one side won, and the pet and its orders show that side's outcome; which one it was. */
async function expectOneWinner(petId: number, deleted: ApiResponse, placed: ApiResponse): Promise<'delete' | 'order'> {
  const outcome = tally([deleted, placed]);
  if (placed.status === 201) {
    expect(outcome, `pet ${petId}`).toEqual({ '201': 1, '409 pet_has_open_order': 1 });
    expect(await petRow(server, petId)).toMatchObject({ status: 'pending', deleted: false });
    expect(await ordersOf(petId)).toEqual([{ id: placed.body.id, status: 'placed' }]);
    expect((await server.request(`/v1/pets/${petId}`)).status).toBe(200);
    return 'order';
  }
  expect(outcome, `pet ${petId}`).toEqual({ '204': 1, '404 pet_not_found': 1 });
  expect(await petRow(server, petId)).toMatchObject({ status: 'available', deleted: true });
  expect(await ordersOf(petId)).toEqual([]);
  expect((await server.request(`/v1/pets/${petId}`)).status).toBe(404);
  return 'delete';
}

describe('deletePet racing placeOrder', () => {
  it('20 races at once: each exactly order 201 + delete 409 pet_has_open_order, or delete 204 + order 404 pet_not_found', async ({ annotate }) => {
    const races = await Promise.all(Array.from({ length: 20 }, (_, i) => doomed(i)));
    const results = await Promise.all(
      races.map(async ({ petId, buyer }, i) => {
        // Half sent order first, half DELETE first.
        const send = [() => deletePet(server, petId), () => placeOrder(server, petId, buyer)];
        if (i % 2) send.reverse();
        const answers = await Promise.all(send.map((f) => f()));
        if (i % 2) answers.reverse();
        return { petId, deleted: answers[0]!, placed: answers[1]! };
      }),
    );
    const winners = { delete: 0, order: 0 };
    for (const { petId, deleted, placed } of results) winners[await expectOneWinner(petId, deleted, placed)]++;
    expect(winners.delete + winners.order).toBe(20);
    await annotate(`DELETE won ${winners.delete}, placeOrder won ${winners.order}`);
    await expectStatusesAgree(server.app.database.pool);
  });

  it.each([
    ['the DELETE', 'delete'],
    ['the order', 'order'],
  ] as const)('queued on the pet’s row with %s first in line, 5 times: it wins, the other sees its outcome', async (_, first) => {
    for (let i = 0; i < 5; i++) {
      const { petId, buyer } = await doomed(i);
      const row = await holdPetRow(server, petId);
      let deleted: Promise<ApiResponse>;
      let placed: Promise<ApiResponse>;
      if (first === 'delete') {
        deleted = deletePet(server, petId);
        await row.queued(1);
        placed = placeOrder(server, petId, buyer);
      } else {
        placed = placeOrder(server, petId, buyer);
        await row.queued(1);
        deleted = deletePet(server, petId);
      }
      await row.queued(2);
      await row.release();
      expect(await expectOneWinner(petId, await deleted, await placed)).toBe(first);
    }
    await expectStatusesAgree(server.app.database.pool);
  });
});

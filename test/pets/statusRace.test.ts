import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/http.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, newAccount, patchPet, petRow, placeOrder, tally } from '../helpers/pets.js';
import { holdPetRow } from '../helpers/rowLock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** A PATCH of an available pet's status racing an order for it: whichever wins, the pet and its orders agree. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' });
});
afterAll(() => server.close());

const ordersOf = async (petId: number) =>
  (await server.app.database.pool.query<{ status: string }>('SELECT status FROM orders WHERE pet_id = $1', [petId])).rows.map((o) => o.status);

/** A pet of the server's account (its creator changes it) and a buyer of its own. */
const contested = async (i: number) => ({ petId: (await createPet(server, { name: `Contested ${i}` })).id, buyer: (await newAccount(server)).key });

/** Exactly one side won, and the pet and its orders show that side's outcome; which one it was. */
async function expectOneWinner(petId: number, patched: ApiResponse, placed: ApiResponse): Promise<'patch' | 'order'> {
  const outcome = tally([patched, placed]);
  if (patched.status === 200) {
    expect(outcome, `pet ${petId}`).toEqual({ '200': 1, '409 pet_not_available': 1 });
    expect(placed.body.message).toBe(`Pet ${petId} is sold, not available.`);
    expect(await petRow(server, petId)).toMatchObject({ status: 'sold', deleted: false });
    expect(await ordersOf(petId)).toEqual([]);
    return 'patch';
  }
  expect(outcome, `pet ${petId}`).toEqual({ '201': 1, '409 pet_status_held_by_order': 1 });
  expect(patched.body.message).toBe(`The status of pet ${petId} is held by order ${placed.body.id} (placed); it changes with that order.`);
  expect(await petRow(server, petId)).toMatchObject({ status: 'pending', deleted: false });
  expect(await ordersOf(petId)).toEqual(['placed']);
  return 'order';
}

describe('updatePet status=sold racing placeOrder', () => {
  it('20 races at once: each exactly PATCH 200 + order 409, or order 201 + PATCH 409, and the pet agrees with its orders', async ({ annotate }) => {
    const races = await Promise.all(Array.from({ length: 20 }, (_, i) => contested(i)));
    const results = await Promise.all(
      races.map(async ({ petId, buyer }, i) => {
        // Half sent order first, half PATCH first.
        const send = [() => patchPet(server, petId, { status: 'sold' }), () => placeOrder(server, petId, buyer)];
        if (i % 2) send.reverse();
        const answers = await Promise.all(send.map((f) => f()));
        if (i % 2) answers.reverse();
        return { petId, patched: answers[0]!, placed: answers[1]! };
      }),
    );
    const winners = { patch: 0, order: 0 };
    for (const { petId, patched, placed } of results) winners[await expectOneWinner(petId, patched, placed)]++;
    expect(winners.patch + winners.order).toBe(20);
    // Which side won how often (the reporter shows it; the next test makes each side win for certain).
    await annotate(`PATCH won ${winners.patch}, placeOrder won ${winners.order}`);
    await expectStatusesAgree(server.app.database.pool);
  });

  it.each([
    ['the PATCH', 'patch'],
    ['the order', 'order'],
  ] as const)('queued on the pet’s row with %s first in line, 5 times: it wins, the other sees its outcome', async (_, first) => {
    for (let i = 0; i < 5; i++) {
      const { petId, buyer } = await contested(i);
      const row = await holdPetRow(server, petId);
      let patched: Promise<ApiResponse>;
      let placed: Promise<ApiResponse>;
      if (first === 'patch') {
        patched = patchPet(server, petId, { status: 'sold' });
        await row.queued(1);
        placed = placeOrder(server, petId, buyer);
      } else {
        placed = placeOrder(server, petId, buyer);
        await row.queued(1);
        patched = patchPet(server, petId, { status: 'sold' });
      }
      await row.queued(2);
      await row.release();
      expect(await expectOneWinner(petId, await patched, await placed)).toBe(first);
    }
    await expectStatusesAgree(server.app.database.pool);
  });
});

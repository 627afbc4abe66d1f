import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPet, clientFor, expectStatusesAgree, petStatus } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered, type ApiClient } from '../helpers/typedClient.js';

/**
 * Racing requests, sent at once, each counted by outcome: the guarded statements must let
 * exactly one of them through, and every pet's status must agree with its orders after.
 */
let server: TestServer;
beforeAll(async () => {
  // Dozens of racing requests queue for 10 connections: on a loaded machine the default 3 s wait
  // answers some of them 503 overloaded, which is right for the service but not what this test is about.
  server = await startTestServer({ DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' });
});
afterAll(() => server.close());

/** `n` clients, each with an API key of its own. */
async function clients(n: number): Promise<ApiClient[]> {
  return Promise.all(Array.from({ length: n }, async () => clientFor(server, await server.createKey('business'))));
}

/** How many answers had each status and code, e.g. { '201': 1, '409 pet_not_available': 19 }. */
function tally(answers: Array<{ status: number; body: { code?: string } }>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, body } of answers) {
    const outcome = status < 300 ? String(status) : `${status} ${body.code}`;
    counts[outcome] = (counts[outcome] ?? 0) + 1;
  }
  return counts;
}

const ordersOfPet = async (petId: number) =>
  (await server.app.database.pool.query<{ account_id: number; status: string }>('SELECT account_id, status FROM orders WHERE pet_id = $1', [petId])).rows;

describe('concurrent orders', () => {
  it('20 keys racing for one pet: exactly one 201 and nineteen 409, the pet pending with one placed order', async () => {
    const petId = await addPet(server);
    const racers = await clients(20);
    const answers = await Promise.all(racers.map((client) => answered(client.POST('/store/orders', { body: { petId } }))));
    expect(tally(answers)).toEqual({ '201': 1, '409 pet_not_available': 19 });
    const won = answers.findIndex((a) => a.status === 201);
    const order = answers[won]!.body;
    expect(order).toMatchObject({ petId, status: 'placed' });
    expect(await petStatus(server, petId)).toBe('pending');
    expect((await ordersOfPet(petId)).map((o) => o.status)).toEqual(['placed']);
    // The one order is the winner's: only its key can read it.
    const reads = await Promise.all(racers.map((client) => client.GET('/store/orders/{orderId}', { params: { path: { orderId: order.id! } } })));
    expect(reads.map((r, i) => [i, r.response.status]).filter(([, status]) => status === 200)).toEqual([[won, 200]]);
    await expectStatusesAgree(server.app.database.pool);
  });

  it('50 pets, 5 racing orders each, all at once: exactly one 201 per pet, 200 refusals, every pet pending', async () => {
    const pets = await Promise.all(Array.from({ length: 50 }, (_, i) => addPet(server, 'available', `batch ${i}`)));
    const racers = await clients(5);
    const answers = await Promise.all(
      pets.flatMap((petId) => racers.map(async (client) => ({ petId, ...(await answered(client.POST('/store/orders', { body: { petId } }))) }))),
    );
    expect(tally(answers)).toEqual({ '201': 50, '409 pet_not_available': 200 });
    for (const petId of pets) {
      expect(tally(answers.filter((a) => a.petId === petId)), `pet ${petId}`).toEqual({ '201': 1, '409 pet_not_available': 4 });
    }
    const { rows } = await server.app.database.pool.query<{ pending: number; placed: number }>(
      `SELECT count(*) FILTER (WHERE p.status = 'pending')::int AS pending,
              (SELECT count(*)::int FROM orders o WHERE o.pet_id = ANY ($1) AND o.status = 'placed') AS placed
         FROM pets p WHERE p.id = ANY ($1)`,
      [pets],
    );
    expect(rows[0]).toEqual({ pending: 50, placed: 50 });
    await expectStatusesAgree(server.app.database.pool);
  });

  it('complete and cancel racing on one order, 20 times over: exactly one wins each time, the pet following the winner', async () => {
    const [owner] = await clients(1);
    const races = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const petId = await addPet(server);
        const { data } = await owner!.POST('/store/orders', { body: { petId } });
        return { petId, orderId: data!.id };
      }),
    );
    const results = await Promise.all(
      races.map(async ({ petId, orderId }) => {
        const path = { params: { path: { orderId } } };
        const [completed, cancelled] = await Promise.all([
          answered(owner!.POST('/store/orders/{orderId}/complete', path)),
          answered(owner!.POST('/store/orders/{orderId}/cancel', path)),
        ]);
        return { petId, orderId, completed, cancelled };
      }),
    );
    for (const { petId, orderId, completed, cancelled } of results) {
      expect(tally([completed, cancelled]), `order ${orderId}`).toEqual({ '200': 1, '409 invalid_order_transition': 1 });
      const won = completed.status === 200 ? 'completed' : 'cancelled';
      const lost = won === 'completed' ? cancelled : completed;
      expect(lost.body.message).toBe(`Order ${orderId} cannot go from ${won} to ${won === 'completed' ? 'cancelled' : 'completed'}: only a placed order can.`);
      expect((await owner!.GET('/store/orders/{orderId}', { params: { path: { orderId } } })).data?.status).toBe(won);
      expect(await petStatus(server, petId)).toBe(won === 'completed' ? 'sold' : 'available');
    }
    await expectStatusesAgree(server.app.database.pool);
  });

  it('a cancelled pet raced for again by 10 keys: exactly one new order, the cancelled one untouched', async () => {
    const petId = await addPet(server);
    const [first, ...racers] = await clients(11);
    const { data: old } = await first!.POST('/store/orders', { body: { petId } });
    await first!.POST('/store/orders/{orderId}/cancel', { params: { path: { orderId: old!.id } } });
    const answers = await Promise.all(racers.map((client) => answered(client.POST('/store/orders', { body: { petId } }))));
    expect(tally(answers)).toEqual({ '201': 1, '409 pet_not_available': 9 });
    expect((await ordersOfPet(petId)).map((o) => o.status).sort()).toEqual(['cancelled', 'placed']);
    await expectStatusesAgree(server.app.database.pool);
  });
});

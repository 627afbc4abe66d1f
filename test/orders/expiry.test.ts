import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceSchedules } from '../../src/app.js';
import { expireDueOrders } from '../../src/orders/expiry.js';
import { manualClock, type ManualClock } from '../helpers/clock.js';
import { createEndpoint, readAllEvents, startReceiver, WEBHOOK_TEST_ENV, type EventBody, type Receiver } from '../helpers/events.js';
import { expectStatusesAgree, petStatus } from '../helpers/orders.js';
import { createPet, newAccount, placeOrder, tally, type TestAccount } from '../helpers/pets.js';
import { waitFor } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * Order holds (issue 38): a placed order expires at its expiresAt, exactly, on the injected clock.
 * The sweep is called here with the test's time; the server's scheduled worker for it is stopped
 * first, so no sweep runs but the test's (test/jobs/schedules.test.ts shows the scheduler).
 */
let server: TestServer;
let clock: ManualClock;
let receiver: Receiver;
let shelter: TestAccount;
let adopter: TestAccount;
const HOLD_MS = 259_200_000;

beforeAll(async () => {
  clock = manualClock();
  server = await startTestServer({ ...WEBHOOK_TEST_ENV, DB_POOL_MAX: '10', DB_POOL_WAIT_MS: '60000' }, { clock: clock.now });
  await server.app.jobs.boss.offWork('order-expiry');
  receiver = await startReceiver();
  [shelter, adopter] = await Promise.all([newAccount(server), newAccount(server)]);
  await createEndpoint(server, shelter.key, receiver.url, ['order.expired', 'pet.updated']);
});
afterAll(async () => {
  await server?.close();
  await receiver?.close();
});

const sweep = (at: number) => expireDueOrders(server.app.database.pool, new Date(at));

/** A pet of the shelter's, ordered by `key` (the adopter's by default): the order as placeOrder answered. */
async function ordered(key = adopter.key) {
  const petId = (await createPet(server, { key: shelter.key })).id;
  const res = await placeOrder(server, petId, key);
  expect(res.status, res.text).toBe(201);
  return { ...res.body, expires: Date.parse(res.body.expiresAt) } as { id: number; petId: number; status: string; createdAt: string; expiresAt: string; expires: number };
}

const order = (id: number, key = adopter.key) => server.request(`/v1/store/orders/${id}`, { key });
const act = (id: number, action: 'complete' | 'cancel', key = adopter.key) => server.request(`/v1/store/orders/${id}/${action}`, { key, method: 'POST' });
const summary = (events: EventBody[], petId: number, orderId: number) =>
  events.filter((e) => e.data.object.id === (e.type.startsWith('order.') ? orderId : petId)).map((e) => `${e.type} ${e.data.object.status}`);

describe('order holds', () => {
  it('an order not completed expires at its expiresAt, not before: the pet is available again, order.expired and pet.updated listed and delivered', async () => {
    clock.set(Date.now());
    const placed = await ordered();
    expect(placed.expires - Date.parse(placed.createdAt)).toBe(HOLD_MS);

    expect(await sweep(placed.expires - 1)).toBe(0);
    expect((await order(placed.id)).body.status).toBe('placed');
    expect(await petStatus(server, placed.petId)).toBe('pending');

    expect(await sweep(placed.expires)).toBe(1);
    const expired = (await order(placed.id)).body;
    expect(expired).toEqual({ ...placed, expires: undefined, status: 'expired', updatedAt: expect.any(String) } as never);
    expect(await petStatus(server, placed.petId)).toBe('available');
    expect(await sweep(placed.expires + 60_000)).toBe(0);
    await expectStatusesAgree(server.app.database.pool);

    // Listed: the shelter (the pet's creator) reads both; the adopter reads its order's.
    const expected = ['order.placed placed', 'pet.updated pending', 'order.expired expired', 'pet.updated available'];
    expect(await waitFor(async () => summary(await readAllEvents(server, shelter.key), placed.petId, placed.id).length === 5, 45_000, 250)).toBe(true);
    expect(summary(await readAllEvents(server, shelter.key), placed.petId, placed.id)).toEqual(['pet.created available', ...expected]);
    expect(summary(await readAllEvents(server, adopter.key), placed.petId, placed.id)).toEqual(['order.placed placed', 'order.expired expired']);
    const listed = (await readAllEvents(server, shelter.key, 'limit=100&type=order.expired')).find((e) => e.data.object.id === placed.id)!;
    expect(listed.data.object).toEqual(expired);

    // Delivered: the shelter's endpoint takes order.expired and pet.updated.
    const delivered = () => receiver.received.map((r) => JSON.parse(r.body)).filter((b) => b.data.object.id === (b.type === 'order.expired' ? placed.id : placed.petId));
    expect(await waitFor(() => delivered().length === 3, 30_000)).toBe(true);
    expect(delivered().map((b) => `${b.type} ${b.data.object.status}`).sort()).toEqual(['order.expired expired', 'pet.updated available', 'pet.updated pending']);

    // An expired order holds nothing: the pet can be ordered again, beside it (then cancelled: no later sweep finds it).
    const again = await placeOrder(server, placed.petId, adopter.key);
    expect(again.status).toBe(201);
    await expectStatusesAgree(server.app.database.pool);
    expect((await act(again.body.id, 'cancel')).status).toBe(200);
  });

  it('from expiresAt on, complete and cancel are 409 order_expired, before the sweep and after it; a millisecond before, complete succeeds', async () => {
    clock.set(Date.now());
    const late = await ordered();
    const expiredError = { code: 'order_expired', message: `Order ${late.id} expired at ${late.expiresAt}: its hold is over.`, status: 409 };
    clock.set(late.expires);
    for (const action of ['complete', 'cancel'] as const) {
      const res = await act(late.id, action);
      expect([res.status, res.body]).toEqual([409, expiredError]);
    }
    // Not swept yet: still placed in the database (the refusals changed nothing), though it reads as expired.
    expect((await server.app.database.pool.query('SELECT status FROM orders WHERE id = $1', [late.id])).rows[0].status).toBe('placed');
    expect((await order(late.id)).body.status).toBe('expired');
    expect(await sweep(late.expires)).toBe(1);
    for (const action of ['complete', 'cancel'] as const) {
      const res = await act(late.id, action);
      expect([res.status, res.body]).toEqual([409, expiredError]);
    }

    clock.set(Date.now());
    const inTime = await ordered();
    clock.set(inTime.expires - 1);
    expect((await act(inTime.id, 'complete')).body.status).toBe('completed');
    expect(await sweep(inTime.expires)).toBe(0);
    expect(await petStatus(server, inTime.petId)).toBe('sold');
    await expectStatusesAgree(server.app.database.pool);
  });

  it('an expired order no longer counts toward the open-order cap', async () => {
    clock.set(Date.now());
    const free = await newAccount(server, 'free');
    const held = [await ordered(free.key), await ordered(free.key), await ordered(free.key)];
    const petId = (await createPet(server, { key: shelter.key })).id;
    expect((await placeOrder(server, petId, free.key)).body.code).toBe('too_many_open_orders');
    expect(await sweep(Math.max(...held.map((o) => o.expires)))).toBe(3);
    expect((await placeOrder(server, petId, free.key)).status).toBe(201);
  });

  it("the server schedules its sweeps on pg-boss's scheduler, and the order-expiry schedule's sweep expires due orders", async () => {
    const { rows } = await server.app.database.pool.query(`SELECT name, cron, timezone FROM pgboss.schedule ORDER BY name`);
    expect(rows).toEqual([
      { name: 'event-retention', cron: '0 * * * *', timezone: 'UTC' },
      { name: 'idempotency-key-expiry', cron: '0 * * * *', timezone: 'UTC' },
      { name: 'order-expiry', cron: '* * * * *', timezone: 'UTC' },
    ]);
    // The earlier tests' orders still placed expire first: the schedule's sweep can only find this one.
    await sweep(Date.now() + 2 * HOLD_MS);
    clock.set(Date.now());
    const placed = await ordered();
    const pool = server.app.database.pool;
    const expiry = serviceSchedules(pool, () => {}).find((s) => s.queue === 'order-expiry')!;
    expect(await expiry.run(new Date(placed.expires))).toBe(1);
    expect((await order(placed.id)).body.status).toBe('expired');
  });

  it('a completion racing the expiry, 30 times: each order completed or expired, never both, and its pet agrees', async () => {
    // The earlier tests' orders still placed expire first: each sweep below can only find the racing order.
    await sweep(Date.now() + 2 * HOLD_MS);
    const outcomes: string[] = [];
    for (let round = 0; round < 30; round++) {
      clock.set(Date.now());
      const racing = await ordered();
      // The request arrived a millisecond before the hold ended; the sweep runs at its end.
      clock.set(racing.expires - 1);
      const [completed, expired] = await Promise.all([act(racing.id, 'complete'), sweep(racing.expires)]);
      expect(tally([completed])[completed.status === 200 ? '200' : '409 order_expired']).toBe(1);
      expect(expired + (completed.status === 200 ? 1 : 0)).toBe(1);
      const status = (await order(racing.id)).body.status;
      expect(status).toBe(completed.status === 200 ? 'completed' : 'expired');
      expect(await petStatus(server, racing.petId)).toBe(status === 'completed' ? 'sold' : 'available');
      outcomes.push(status);
    }
    // Both outcomes happen (15 and 15 on a quiet machine), but which wins is timing: not asserted.
    expect(outcomes).toHaveLength(30);
    await expectStatusesAgree(server.app.database.pool);
    // Each order has exactly one final event: order.completed or order.expired.
    const { rows } = await server.app.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM events WHERE type IN ('order.completed', 'order.expired') GROUP BY object->>'id' HAVING count(*) > 1`,
    );
    expect(rows).toEqual([]);
  });
});

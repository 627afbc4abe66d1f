import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expireDueOrders } from '../../src/orders/expiry.js';
import { manualClock, type ManualClock } from '../helpers/clock.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, deletePet, newAccount, patchPet, petRow, placeOrder, tally, type TestAccount } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * Issue 43: a hold ends at its order's expiresAt for every answer, not when the sweep gets there.
 * The server's scheduled sweep is stopped, so nothing expires an order but what the test does;
 * time is the test's clock only (a 10-minute hold, moved past, never waited for).
 */
const HOLD_MS = 600_000;
let server: TestServer;
let clock: ManualClock;
let shelter: TestAccount;
let adopter: TestAccount;
let other: TestAccount;

beforeAll(async () => {
  clock = manualClock();
  server = await startTestServer({ ORDER_HOLD_SECONDS: String(HOLD_MS / 1000), DB_POOL_MAX: '10' }, { clock: clock.now });
  await server.app.jobs.boss.offWork('order-expiry');
  [shelter, adopter, other] = await Promise.all([newAccount(server), newAccount(server), newAccount(server)]);
});
afterAll(() => server?.close());

const pool = () => server.app.database.pool;
const sweep = (at: number) => expireDueOrders(pool(), new Date(at));

interface PlacedOrder {
  id: number;
  petId: number;
  status: string;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  expires: number;
}

/** A pet of the shelter's (category `categoryId`), ordered by `key`: the order as placeOrder answered. */
async function ordered(key = adopter.key, categoryId = 1): Promise<PlacedOrder> {
  const petId = (await createPet(server, { key: shelter.key, categoryId })).id;
  const res = await placeOrder(server, petId, key);
  expect(res.status, res.text).toBe(201);
  return { ...res.body, expires: Date.parse(res.body.expiresAt) };
}

/** The events written about an order and its pet, in the order written: `type status`, each. */
async function eventsAbout(order: { id: number; petId: number }): Promise<string[]> {
  const { rows } = await pool().query<{ e: string }>(
    `SELECT type || ' ' || (object->>'status') AS e FROM events
      WHERE (type LIKE 'order.%' AND object->>'id' = $1::text) OR (type LIKE 'pet.%' AND object->>'id' = $2::text) ORDER BY id`,
    [order.id, order.petId],
  );
  return rows.map((r) => r.e);
}

/** The order's and its pet's status as the database holds them (what the sweep has written, or not). */
async function stored(order: { id: number; petId: number }) {
  const { rows } = await pool().query<{ order: string; pet: string }>(
    'SELECT o.status AS order, p.status AS pet FROM orders o JOIN pets p ON p.id = o.pet_id WHERE o.id = $1',
    [order.id],
  );
  expect(rows[0]!.order === 'placed' || rows[0]!.order === 'expired').toBe(true);
  return rows[0]!;
}

const getOrder = (id: number, key = adopter.key) => server.request(`/v1/store/orders/${id}`, { key });
const ids = (body: Array<{ id: number }>) => body.map((x) => x.id);

describe('a hold ends at expiresAt for every answer, before the sweep runs', () => {
  it('a free account at its cap places again right after its orders’ expiresAt: exactly 3 more, then 409', async () => {
    clock.set(Date.now());
    const free = await newAccount(server, 'free');
    const held = [await ordered(free.key), await ordered(free.key), await ordered(free.key)];
    const pets = await Promise.all(Array.from({ length: 4 }, async () => (await createPet(server, { key: shelter.key })).id));
    const last = Math.max(...held.map((o) => o.expires));

    // A millisecond before the last hold ends, that one still holds: still at the cap.
    clock.set(last - 1);
    expect((await placeOrder(server, pets[0]!, free.key)).body.code).toBe('too_many_open_orders');

    clock.set(last);
    const answers = [];
    for (const petId of pets) answers.push(await placeOrder(server, petId, free.key));
    expect(tally(answers)).toEqual({ '201': 3, '409 too_many_open_orders': 1 });
    // Nothing swept them: the database still says placed, the answers say expired.
    for (const order of held) {
      expect(await stored(order)).toEqual({ order: 'placed', pet: 'pending' });
      expect((await getOrder(order.id, free.key)).body.status).toBe('expired');
    }
    await expectStatusesAgree(pool());
  });

  it('the pet of an expired order is ordered by another account at once; the expiry’s events are written then, once, and the sweep finds nothing', async () => {
    clock.set(Date.now());
    const first = await ordered();

    clock.set(first.expires - 1);
    expect((await placeOrder(server, first.petId, other.key)).body.code).toBe('pet_not_available');

    clock.set(first.expires);
    const second = await placeOrder(server, first.petId, other.key);
    expect(second.status, second.text).toBe(201);
    expect(second.body.createdAt).toBe(new Date(first.expires).toISOString());
    // The first order expired at its expiresAt, written by the placement with its events, before the new order's.
    expect(await eventsAbout(first)).toEqual([
      'pet.created available',
      'order.placed placed',
      'pet.updated pending',
      'order.expired expired',
      'pet.updated available',
      'pet.updated pending',
    ]);
    expect(await eventsAbout({ id: second.body.id, petId: first.petId })).toContain('order.placed placed');
    const expired = (await getOrder(first.id)).body;
    expect(expired).toEqual({ ...first, expires: undefined, status: 'expired', updatedAt: first.expiresAt } as never);
    expect((await pool().query('SELECT status FROM orders WHERE id = $1', [first.id])).rows[0].status).toBe('expired');

    // The sweep, later: nothing left to expire of these, and no second order.expired.
    await sweep(first.expires + 60_000);
    expect((await eventsAbout(first)).filter((e) => e.startsWith('order.expired'))).toHaveLength(1);
    expect((await getOrder(second.body.id, other.key)).body.status).toBe('placed');
    await expectStatusesAgree(pool());
  });

  it('getOrder, listOrders, getPet and listPets show expired and available from expiresAt on, the same before and after the sweep', async () => {
    clock.set(Date.now());
    const order = await ordered(adopter.key, 77);
    const created = await server.request(`/v1/pets/${order.petId}`);
    const pendingEtag = created.headers.get('etag')!;
    const listed = async (query: string, key?: string) => ids((await server.request(query, { key })).body);
    const views = async () => ({
      order: (await getOrder(order.id)).body,
      placed: (await listed('/v1/store/orders?limit=100&status=placed', adopter.key)).includes(order.id),
      expired: (await listed('/v1/store/orders?limit=100&status=expired', adopter.key)).includes(order.id),
      all: (await server.request('/v1/store/orders?limit=100', { key: adopter.key })).body.find((o: { id: number }) => o.id === order.id),
      pet: (await server.request(`/v1/pets/${order.petId}`)).body,
      etag: (await server.request(`/v1/pets/${order.petId}`)).headers.get('etag'),
      available: (await listed('/v1/pets?limit=100&categoryId=77&status=available')).includes(order.petId),
      pending: (await listed('/v1/pets?limit=100&categoryId=77&status=pending')).includes(order.petId),
      inCategory: (await server.request('/v1/pets?limit=100&categoryId=77')).body.find((p: { id: number }) => p.id === order.petId),
    });

    clock.set(order.expires - 1);
    const before = await views();
    expect(before).toMatchObject({ placed: true, expired: false, available: false, pending: true, etag: pendingEtag });
    expect([before.order.status, before.all.status, before.pet.status, before.inCategory.status]).toEqual(['placed', 'placed', 'pending', 'pending']);

    clock.set(order.expires);
    const after = await views();
    expect(after).toMatchObject({ placed: false, expired: true, available: true, pending: false });
    expect(after.order).toEqual({ ...order, expires: undefined, status: 'expired', updatedAt: order.expiresAt } as never);
    expect(after.all).toEqual(after.order);
    expect(after.pet).toEqual({ ...before.pet, status: 'available' });
    expect(after.inCategory).toEqual(after.pet);
    // The version the expiry will write (one status change more).
    expect(after.etag).toBe(`"${Number(JSON.parse(pendingEtag)) + 1}"`);
    expect(await stored(order)).toEqual({ order: 'placed', pet: 'pending' });

    expect(await sweep(order.expires)).toBe(1);
    expect(await stored(order)).toEqual({ order: 'expired', pet: 'available' });
    expect(await views()).toEqual(after);
    expect((await eventsAbout(order)).filter((e) => e.startsWith('order.expired') || e === 'pet.updated available')).toEqual([
      'order.expired expired',
      'pet.updated available',
    ]);
  });

  it('a change to the pet after expiresAt, before the sweep: updatePet with the ETag getPet showed, and deletePet, are not held by the ended order', async () => {
    // Earlier tests' orders, still placed, expire first: the sweep below can only find this test's.
    await sweep(Date.now() + 10 * HOLD_MS);
    clock.set(Date.now());
    const [a, b] = [await ordered(), await ordered()];
    clock.set(Math.max(a.expires, b.expires));
    const etag = (await server.request(`/v1/pets/${a.petId}`)).headers.get('etag')!;
    const updated = await patchPet(server, a.petId, { status: 'sold' }, { key: shelter.key, headers: { 'if-match': etag } });
    expect([updated.status, updated.body.status]).toEqual([200, 'sold']);
    expect(updated.headers.get('etag')).toBe(`"${Number(JSON.parse(etag)) + 1}"`);
    expect((await deletePet(server, b.petId, { key: shelter.key })).status).toBe(204);
    expect(await petRow(server, b.petId)).toMatchObject({ status: 'available', deleted: true });

    // A refused change rolls its expiry back with it: another account's patch is 403 and writes nothing.
    const c = await ordered();
    clock.set(c.expires);
    expect((await patchPet(server, c.petId, { status: 'sold' }, { key: other.key })).status).toBe(403);
    expect(await stored(c)).toEqual({ order: 'placed', pet: 'pending' });

    expect(await sweep(c.expires)).toBe(1);
    for (const order of [a, b, c]) expect((await eventsAbout(order)).filter((e) => e.startsWith('order.expired'))).toHaveLength(1);
    await expectStatusesAgree(pool());
  });

  it('placements racing the sweep at expiresAt, 20 rounds: each ended hold expired once (one order.expired, one pet.updated available), each pet ordered again once', async () => {
    // Earlier tests' orders, still placed, expire first: each sweep below can only find this round's.
    clock.set(Date.now() + 10 * HOLD_MS);
    await sweep(clock.now());
    const outcomes: Record<string, number> = {};
    for (let round = 0; round < 20; round++) {
      clock.set(Date.now());
      const order = await ordered();
      clock.set(order.expires);
      const [swept, placed] = await Promise.all([sweep(order.expires), placeOrder(server, order.petId, other.key)]);
      expect(placed.status, placed.text).toBe(201);
      const written = await eventsAbout(order);
      expect(written.filter((e) => e === 'order.expired expired')).toHaveLength(1);
      expect(written.filter((e) => e === 'pet.updated available')).toHaveLength(1);
      expect(written.at(-1)).toBe('pet.updated pending');
      const by = swept === 1 ? 'sweep' : 'placement';
      expect(swept === 1 || swept === 0).toBe(true);
      outcomes[by] = (outcomes[by] ?? 0) + 1;
      // The new order is the pet's only placed one; let it go so no later sweep finds it.
      expect((await server.request(`/v1/store/orders/${placed.body.id}/cancel`, { key: other.key, method: 'POST' })).status).toBe(200);
    }
    // Which of the two expires the hold is timing: only that there were 20, each once.
    expect((outcomes.sweep ?? 0) + (outcomes.placement ?? 0)).toBe(20);
    await expectStatusesAgree(pool());
  });
});

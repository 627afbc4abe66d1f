import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ordersRepository } from '../../src/orders/repository.js';
import { expireDueOrders } from '../../src/orders/expiry.js';
import { petsRepository } from '../../src/pets/repository.js';
import type { IdempotencyKey } from '../../src/idempotency/idempotent.js';
import { startPgProxy, type PgProxy } from '../helpers/pgProxy.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/**
 * Issue 45: every write of pets and orders is one database round trip, its Idempotency-Key's claim
 * and saved response included, refusals too. The repositories run on a pool that reaches Postgres
 * through a proxy counting round trips (a Sync or a simple Query), so nothing else is counted.
 */
let db: TestDatabase;
let proxy: PgProxy;
let pool: pg.Pool;
let direct: pg.Pool;
let now = Date.parse('2026-12-01T00:00:00Z');
let queued = 0;
const clock = () => now;
let pets: ReturnType<typeof petsRepository>;
let orders: ReturnType<typeof ordersRepository>;
let account: number;

beforeAll(async () => {
  db = await createTestDatabase();
  direct = new pg.Pool({ connectionString: db.env.DATABASE_URL });
  const url = new URL(db.env.DATABASE_URL!);
  proxy = await startPgProxy({ host: url.hostname, port: Number(url.port || 5432) }, 0);
  url.host = `127.0.0.1:${proxy.port}`;
  pool = new pg.Pool({ connectionString: url.toString(), max: 1 });
  await pool.query('SELECT 1'); // the connection's start-up is not a write's
  pets = petsRepository(pool, { clock, eventsQueued: () => queued++ });
  orders = ordersRepository(pool, { holdSeconds: 60, clock, eventsQueued: () => queued++ });
  account = (await direct.query<{ id: number }>(`INSERT INTO accounts (plan) VALUES ('business') RETURNING id::int`)).rows[0]!.id;
  // Subscribed to everything: each write also writes its delivery intents.
  await direct.query(`INSERT INTO webhook_endpoints (account_id, url, event_types, secret) VALUES ($1, 'https://example.com/hook', ARRAY['*'], 'sealed')`, [account]);
});
afterAll(async () => {
  await pool?.end();
  await direct?.end();
  await proxy?.close();
  await db?.drop();
});

/** The round trips `write` takes, and what it answered or threw. */
async function tripsOf<T>(write: () => Promise<T>): Promise<{ trips: number; result?: T; error?: string }> {
  const before = proxy.stats.roundTrips;
  try {
    const result = await write();
    return { trips: proxy.stats.roundTrips - before, result };
  } catch (err) {
    return { trips: proxy.stats.roundTrips - before, error: (err as { code?: string }).code ?? (err as Error).message };
  }
}

const keyOf = (operation: IdempotencyKey['operation'], key: string, status: number): IdempotencyKey => ({ account, operation, key, hash: `hash-${key}`, params: null, status });

describe('the round-trip proxy', () => {
  it("tells a background pool's round trips (application_name animal-store-…) from a request pool's", async () => {
    const url = new URL(db.env.DATABASE_URL!);
    url.host = `127.0.0.1:${proxy.port}`;
    const background = new pg.Client({ connectionString: url.toString(), application_name: 'animal-store-jobs' });
    const requests = new pg.Client({ connectionString: url.toString(), application_name: 'animal-store' });
    await Promise.all([background.connect(), requests.connect()]);
    const [all, asked] = [proxy.stats.roundTrips, proxy.stats.requestRoundTrips];
    await background.query('SELECT 1');
    await background.query('SELECT $1::int', [2]);
    await requests.query('SELECT $1::int', [3]);
    expect([proxy.stats.roundTrips - all, proxy.stats.requestRoundTrips - asked]).toEqual([3, 1]);
    await Promise.all([background.end(), requests.end()]);
  });
});

describe('one round trip per write', () => {
  it('createPet, with and without an Idempotency-Key, and its replay: 1 each; each writes its event and delivery intent', async () => {
    const before = queued;
    expect((await tripsOf(() => pets.create({ name: 'One', categoryId: 1, status: 'available' }, account, null))).trips).toBe(1);
    expect((await tripsOf(() => pets.create({ name: 'Two', categoryId: 1, status: 'available' }, account, keyOf('createPet', 'c1', 201)))).trips).toBe(1);
    const replay = await tripsOf(() => pets.create({ name: 'Two', categoryId: 1, status: 'available' }, account, keyOf('createPet', 'c1', 201)));
    expect([replay.trips, 'replayed' in replay.result!]).toEqual([1, true]);
    expect(queued - before).toBe(2);
    expect((await direct.query(`SELECT count(*)::int AS n FROM webhook_outbox`)).rows[0].n).toBe(2);
  });

  it('updatePet and deletePet, keyed or not, and their refusals: 1 each', async () => {
    const id = (await pets.create({ name: 'Changing', categoryId: 1, status: 'available' }, account, null)).body.id;
    expect((await tripsOf(() => pets.update(id, { name: 'Changed' }, account, undefined, null))).trips).toBe(1);
    expect((await tripsOf(() => pets.update(id, { name: 'Keyed' }, account, '"2"', keyOf('updatePet', 'u1', 200)))).trips).toBe(1);
    expect(await tripsOf(() => pets.update(id, { name: 'Stale' }, account, '"1"', null))).toEqual({ trips: 1, error: 'precondition_failed' });
    expect(await tripsOf(() => pets.delete(id, account + 1_000, undefined, null))).toEqual({ trips: 1, error: 'forbidden' });
    expect((await tripsOf(() => pets.delete(id, account, undefined, keyOf('deletePet', 'd1', 204)))).trips).toBe(1);
    expect(await tripsOf(() => pets.delete(id, account, undefined, null))).toEqual({ trips: 1, error: 'pet_not_found' });
  });

  it('placeOrder (keyed or not), completeOrder, cancelOrder and their refusals: 1 each; the expiry sweep 1 per batch', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(async (i) => (await pets.create({ name: `For order ${i}`, categoryId: 1, status: 'available' }, account, null)).body.id));
    const placed = await tripsOf(() => orders.place(ids[0]!, account, 10, null));
    expect(placed.trips).toBe(1);
    const keyed = await tripsOf(() => orders.place(ids[1]!, account, 10, keyOf('placeOrder', 'p1', 201)));
    expect(keyed.trips).toBe(1);
    expect(await tripsOf(() => orders.place(ids[0]!, account, 10, null))).toEqual({ trips: 1, error: 'pet_not_available' });
    expect(await tripsOf(() => orders.place(ids[2]!, account, 2, null))).toEqual({ trips: 1, error: 'too_many_open_orders' });
    const first = (placed.result as { body: { id: number } }).body.id;
    const second = (keyed.result as { body: { id: number } }).body.id;
    expect((await tripsOf(() => orders.complete(first, account))).trips).toBe(1);
    expect((await tripsOf(() => orders.cancel(second, account))).trips).toBe(1);
    expect(await tripsOf(() => orders.cancel(first, account))).toEqual({ trips: 1, error: 'invalid_order_transition' });

    // Two holds that end: the sweep expires both in one batch, one round trip.
    await orders.place(ids[2]!, account, 10, null);
    await orders.place(ids[3]!, account, 10, null);
    now += 61_000;
    expect(await tripsOf(() => expireDueOrders(pool, new Date(now)))).toEqual({ trips: 1, result: 2 });
  });
});

import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATUS_DISAGREEMENTS, addPet } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * The database itself refuses to commit a pet whose status disagrees with its orders
 * (005_orders.sql), whoever writes: these tests write with plain SQL, not the service.
 */
let server: TestServer;
let pool: pg.Pool;
beforeAll(async () => {
  server = await startTestServer();
  pool = server.app.database.pool;
});
afterAll(() => server.close());

/** A pet with one order, through the API: its ids. */
async function orderedPet(then?: 'complete' | 'cancel') {
  const petId = await addPet(server);
  const { data } = await server.api.POST('/store/orders', { body: { petId } });
  if (then) await server.api.POST(`/store/orders/{orderId}/${then}`, { params: { path: { orderId: data!.id } } });
  return { petId, orderId: data!.id };
}

/** Runs the statements in one transaction; the error that stopped it (at a statement or at COMMIT), if any. */
async function commit(...statements: Array<[string, unknown[]]>): Promise<{ code?: string } | undefined> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const [sql, params] of statements) await client.query(sql, params);
    await client.query('COMMIT');
    return undefined;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    return err as { code?: string };
  } finally {
    client.release();
  }
}

/** What the tests' check and the migration's view each report inside a transaction that is rolled back. */
async function reportedInside(...statements: Array<[string, unknown[]]>) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const [sql, params] of statements) await client.query(sql, params);
    const check = (await client.query<{ id: number }>(STATUS_DISAGREEMENTS)).rows.map((r) => r.id);
    const view = (await client.query<{ pet_id: number }>('SELECT pet_id FROM pet_order_disagreements')).rows.map((r) => r.pet_id);
    return { check, view };
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

const status = async (table: 'pets' | 'orders', id: number) =>
  (await pool.query<{ status: string }>(`SELECT status FROM ${table} WHERE id = $1`, [id])).rows[0]!.status;

describe('pet and order statuses, held by the database', () => {
  it('refuses to move a pending pet alone, and keeps it pending', async () => {
    const { petId } = await orderedPet();
    const err = await commit([`UPDATE pets SET status = 'available' WHERE id = $1`, [petId]]);
    expect(err?.code).toBe('23514');
    expect(await status('pets', petId)).toBe('pending');
  });

  it('refuses to move an order alone, and keeps it placed', async () => {
    const { petId, orderId } = await orderedPet();
    expect((await commit([`UPDATE orders SET status = 'completed' WHERE id = $1`, [orderId]]))?.code).toBe('23514');
    expect([await status('orders', orderId), await status('pets', petId)]).toEqual(['placed', 'pending']);
  });

  it('commits the order and its pet moved together', async () => {
    const { petId, orderId } = await orderedPet();
    const err = await commit(
      [`UPDATE orders SET status = 'cancelled' WHERE id = $1`, [orderId]],
      [`UPDATE pets SET status = 'available' WHERE id = $1`, [petId]],
    );
    expect(err).toBeUndefined();
    expect([await status('orders', orderId), await status('pets', petId)]).toEqual(['cancelled', 'available']);
  });

  it('refuses an order inserted for a pet that stays available', async () => {
    const petId = await addPet(server);
    const keyId = (await pool.query<{ id: number }>('SELECT min(id)::int AS id FROM api_keys')).rows[0]!.id;
    expect((await commit([`INSERT INTO orders (pet_id, account_id) VALUES ($1, $2)`, [petId, keyId]]))?.code).toBe('23514');
  });

  it('refuses a second placed order for one pet (23505), and removing a pet with a placed order (23514)', async () => {
    const { petId, orderId } = await orderedPet();
    const accountId = (await pool.query<{ id: number }>('SELECT account_id::int AS id FROM orders WHERE id = $1', [orderId])).rows[0]!.id;
    expect((await commit([`INSERT INTO orders (pet_id, account_id) VALUES ($1, $2)`, [petId, accountId]]))?.code).toBe('23505');
    expect((await commit([`UPDATE pets SET deleted_at = now() WHERE id = $1`, [petId]]))?.code).toBe('23514');
    expect((await pool.query('SELECT deleted_at FROM pets WHERE id = $1', [petId])).rows[0].deleted_at).toBeNull();
  });

  it('lets pets without orders, or with only cancelled ones, have any status (outside the workflow)', async () => {
    for (const s of ['pending', 'sold'] as const) await addPet(server, s);
    const cancelled = await orderedPet('cancel');
    expect(await commit([`UPDATE pets SET status = 'sold' WHERE id = $1`, [cancelled.petId]])).toBeUndefined();
    expect(await status('pets', cancelled.petId)).toBe('sold');
    expect((await pool.query(STATUS_DISAGREEMENTS)).rows).toEqual([]);
  });

  it("has a check (the tests') and a view (the trigger's) that both see a disagreement before it is refused", async () => {
    const { petId, orderId } = await orderedPet();
    const sold = await orderedPet('complete');
    const cases: Array<Array<[string, unknown[]]>> = [
      [[`UPDATE pets SET status = 'available' WHERE id = $1`, [petId]]],
      [[`UPDATE orders SET status = 'completed' WHERE id = $1`, [orderId]]],
      [[`UPDATE pets SET status = 'pending' WHERE id = $1`, [sold.petId]]],
      [[`UPDATE orders SET status = 'placed' WHERE id = $1`, [sold.orderId]]],
    ];
    const expected = [[petId], [petId], [sold.petId], [sold.petId]];
    for (const [i, statements] of cases.entries()) {
      expect(await reportedInside(...statements), `case ${i}`).toEqual({ check: expected[i], view: expected[i] });
    }
    expect(await reportedInside()).toEqual({ check: [], view: [] });
  });
});

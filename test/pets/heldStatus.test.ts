import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, deletePet, newAccount, patchPet, petRow, petView, placeOrder, type TestAccount } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** A pet's status belongs to its placed or completed order; only its name and category still change. */
let server: TestServer;
let buyer: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  buyer = await newAccount(server);
});
afterAll(async () => {
  await expectStatusesAgree(server.app.database.pool);
  await server.close();
});

/** A pet of the server's account with an order placed by the buyer. */
async function petWithPlacedOrder(name: string) {
  const { id } = await createPet(server, { name });
  const order = await placeOrder(server, id, buyer.key);
  expect(order.status).toBe(201);
  return { id, orderId: order.body.id as number };
}

const orderAction = (orderId: number, action: 'complete' | 'cancel') => server.request(`/v1/store/orders/${orderId}/${action}`, { key: buyer.key, method: 'POST' });

function expectHeld(res: { status: number; body: any }, petId: number, orderId: number, orderStatus: string) {
  expect(res.status).toBe(409);
  expect(res.body).toEqual({
    code: 'pet_status_held_by_order',
    message: `The status of pet ${petId} is held by order ${orderId} (${orderStatus}); it changes with that order.`,
    status: 409,
  });
}

describe('orders hold the status', () => {
  it.each(['available', 'sold'] as const)('a placed order: PATCH status %s is 409 naming the order, and nothing changes', async (status) => {
    const { id, orderId } = await petWithPlacedOrder(`Held ${status}`);
    const before = await petView(server, id);
    expectHeld(await patchPet(server, id, { status }), id, orderId, 'placed');
    // With a name beside it: the whole patch is refused, the name too.
    expectHeld(await patchPet(server, id, { name: 'Sneaky', status }), id, orderId, 'placed');
    expect(await petView(server, id)).toEqual(before);
    expect((await petRow(server, id))!.status).toBe('pending');
  });

  it('a placed order: name and category still change, and a status equal to the current one is no change', async () => {
    const { id } = await petWithPlacedOrder('Renamable');
    const renamed = await patchPet(server, id, { name: 'Renamed', categoryId: 8 });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ id, name: 'Renamed', categoryId: 8, status: 'pending' });
    const same = await patchPet(server, id, { status: 'pending', name: 'Renamed again' });
    expect(same.status).toBe(200);
    expect(same.body).toEqual({ id, name: 'Renamed again', categoryId: 8, status: 'pending' });
  });

  it('a completed order holds the status (sold) too', async () => {
    const { id, orderId } = await petWithPlacedOrder('Adopted');
    expect((await orderAction(orderId, 'complete')).status).toBe(200);
    for (const status of ['available', 'pending'] as const) expectHeld(await patchPet(server, id, { status }), id, orderId, 'completed');
    expect((await petRow(server, id))!.status).toBe('sold');
    expect((await patchPet(server, id, { status: 'sold' })).status).toBe(200);
    expect((await patchPet(server, id, { name: 'Adopted at last' })).body).toEqual({ id, name: 'Adopted at last', categoryId: 1, status: 'sold' });
  });

  it('a completed order after a cancelled one: the completed one is named', async () => {
    const { id, orderId: cancelled } = await petWithPlacedOrder('Second try');
    expect((await orderAction(cancelled, 'cancel')).status).toBe(200);
    const order = await placeOrder(server, id, buyer.key);
    expect((await orderAction(order.body.id, 'complete')).status).toBe(200);
    expectHeld(await patchPet(server, id, { status: 'available' }), id, order.body.id, 'completed');
  });

  it('only cancelled orders: the pet is outside the workflow and takes any status', async () => {
    const { id, orderId } = await petWithPlacedOrder('Returned');
    expect((await orderAction(orderId, 'cancel')).status).toBe(200);
    expect((await petRow(server, id))!.status).toBe('available');
    for (const status of ['sold', 'pending', 'available', 'sold'] as const) {
      const res = await patchPet(server, id, { status });
      expect(res.status, status).toBe(200);
      expect(res.body.status).toBe(status);
    }
  });

  it('no orders at all: any status', async () => {
    const { id } = await createPet(server, { name: 'Free' });
    expect((await patchPet(server, id, { status: 'pending' })).body.status).toBe('pending');
    expect((await patchPet(server, id, { status: 'available' })).body.status).toBe('available');
  });

  it('deletePet with a placed order is 409 pet_has_open_order; after the cancel, 204', async () => {
    const { id, orderId } = await petWithPlacedOrder('Kept');
    const res = await deletePet(server, id);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: 'pet_has_open_order', message: `Pet ${id} has a placed order (${orderId}); complete or cancel it first.`, status: 409 });
    expect(await petRow(server, id)).toMatchObject({ status: 'pending', deleted: false });
    expect((await petView(server, id)).status).toBe(200);
    expect((await orderAction(orderId, 'cancel')).status).toBe(200);
    expect((await deletePet(server, id)).status).toBe(204);
    expect((await petView(server, id)).status).toBe(404);
  });

  it('the database refuses a status that disagrees with a placed order, whoever writes it', async () => {
    const { id } = await petWithPlacedOrder('Guarded');
    await expect(server.app.database.pool.query(`UPDATE pets SET status = 'available' WHERE id = $1`, [id])).rejects.toThrow();
    await expect(server.app.database.pool.query(`UPDATE pets SET deleted_at = now() WHERE id = $1`, [id])).rejects.toThrow();
    expect(await petRow(server, id)).toMatchObject({ status: 'pending', deleted: false });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addPet, expectStatusesAgree, orderCount, petStatus } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'https://store.test' });
});
afterAll(() => server.close());

const place = (petId: number) => server.api.POST('/store/orders', { body: { petId } });
const complete = (orderId: number) => server.api.POST('/store/orders/{orderId}/complete', { params: { path: { orderId } } });
const cancel = (orderId: number) => server.api.POST('/store/orders/{orderId}/cancel', { params: { path: { orderId } } });
const getOrder = (orderId: number) => server.api.GET('/store/orders/{orderId}', { params: { path: { orderId } } });
const getPet = async (petId: number) => (await server.api.GET('/pets/{petId}', { params: { path: { petId } } })).data!;
const listPetIds = async (status: 'available' | 'pending' | 'sold') =>
  (await server.api.GET('/pets', { params: { query: { status, limit: 100 } } })).data!.map((p) => p.id);

async function placed(petId: number) {
  const { data, response } = await place(petId);
  expect(response.status).toBe(201);
  return data!;
}

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('POST /v1/store/orders (placeOrder)', () => {
  it('places an order, moves the pet to pending at once, and points Location at the order', async () => {
    const petId = await addPet(server);
    const { data, response } = await place(petId);
    expect(response.status).toBe(201);
    expect(data).toEqual({ id: expect.any(Number), petId, status: 'placed', createdAt: expect.stringMatching(ISO_MS), updatedAt: data!.createdAt, expiresAt: expect.stringMatching(ISO_MS) });
    // The hold: ORDER_HOLD_SECONDS (three days by default) after the order was placed.
    expect(Date.parse(data!.expiresAt) - Date.parse(data!.createdAt)).toBe(259_200_000);
    expect(response.headers.get('location')).toBe(`https://store.test/v1/store/orders/${data!.id}`);
    expect(response.headers.get('api-stability')).toBe('experimental');
    // getPet and listPets?status=pending show the new status at once.
    expect((await getPet(petId)).status).toBe('pending');
    expect(await listPetIds('pending')).toContain(petId);
    expect(await listPetIds('available')).not.toContain(petId);
    await expectStatusesAgree(server.app.database.pool);
  });

  it('answers 404 pet_not_found for a pet that does not exist, and stores nothing', async () => {
    const before = await orderCount(server);
    const { error, response } = await place(987_654_321);
    expect(response.status).toBe(404);
    expect(error).toEqual({ code: 'pet_not_found', message: 'Pet 987654321 not found.', status: 404 });
    expect(response.headers.get('api-stability')).toBe('experimental');
    expect(await orderCount(server)).toBe(before);
  });

  it.each(['pending', 'sold'] as const)('answers 409 pet_not_available for a pet created %s, and changes nothing', async (status) => {
    const petId = await addPet(server, status);
    const before = await orderCount(server);
    const { error, response } = await place(petId);
    expect(response.status).toBe(409);
    expect(error).toEqual({ code: 'pet_not_available', message: `Pet ${petId} is ${status}, not available.`, status: 409 });
    expect(await orderCount(server)).toBe(before);
    expect(await petStatus(server, petId)).toBe(status);
  });

  it('answers 409 pet_not_available for a pet another order holds, leaving that order as it was', async () => {
    const petId = await addPet(server);
    const first = await placed(petId);
    const { error, response } = await place(petId);
    expect(response.status).toBe(409);
    expect(error?.message).toBe(`Pet ${petId} is pending, not available.`);
    expect((await getOrder(first.id)).data).toEqual(first);
  });

  // Raw: bodies a typed client would not let anyone send. Each is 400, names the field, and stores nothing.
  it.each([
    ['string petId', '{"petId":"7"}', /body\/petId must be integer/],
    ['missing petId', '{}', /body\/petId is required/],
    ['unknown property', '{"petId":7,"note":"x"}', /body\/note is not a known property/],
    ['petId 0', '{"petId":0}', /body\/petId must be >= 1/],
    ['petId beyond 2^53', '{"petId":9007199254740993}', /body\/petId must be <= 9007199254740991/],
    ['fractional petId', '{"petId":1.5}', /body\/petId must be integer/],
    ['array body', '[{"petId":7}]', /body must be object/],
  ])('rejects %s with 400', async (_case, body, message) => {
    const before = await orderCount(server);
    const res = await server.request('/v1/store/orders', { body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
    expect(res.headers.get('api-stability')).toBe('experimental');
    expect(await orderCount(server)).toBe(before);
  });

  it('rejects a missing body, malformed JSON and another media type', async () => {
    expect((await server.request('/v1/store/orders', { method: 'POST' })).body.message).toBe('body is required (application/json)');
    const bad = await server.request('/v1/store/orders', { body: '{"petId":', headers: { 'content-type': 'application/json' } });
    expect([bad.status, bad.body.code]).toEqual([400, 'invalid_json']);
    const text = await server.request('/v1/store/orders', { body: 'petId=1', headers: { 'content-type': 'text/plain' } });
    expect([text.status, text.body.code, text.headers.get('api-stability')]).toEqual([415, 'unsupported_media_type', 'experimental']);
  });

  it('authenticates first: no key gets 401 (still marked experimental), whatever the body', async () => {
    const res = await server.request('/v1/store/orders', { key: null, body: '{bad', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
    expect(res.headers.get('api-stability')).toBe('experimental');
  });
});

describe('GET /v1/store/orders/{orderId} (getOrder)', () => {
  it('returns the order', async () => {
    const order = await placed(await addPet(server));
    const { data, response } = await getOrder(order.id);
    expect(response.status).toBe(200);
    expect(data).toEqual(order);
    expect(response.headers.get('api-stability')).toBe('experimental');
  });

  it('answers 404 order_not_found for an order that does not exist', async () => {
    const { error, response } = await getOrder(987_654_321);
    expect(response.status).toBe(404);
    expect(error).toEqual({ code: 'order_not_found', message: 'Order 987654321 not found.', status: 404 });
    expect(response.headers.get('api-stability')).toBe('experimental');
  });

  it.each(['abc', '0', '-1', '1.5', '9007199254740992'])('rejects orderId %s with 400', async (id) => {
    const res = await server.request(`/v1/store/orders/${id}`);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^params\/orderId /);
    expect(res.headers.get('api-stability')).toBe('experimental');
  });
});

describe('POST /v1/store/orders/{orderId}/complete and /cancel', () => {
  it('complete: placed -> completed, the pet pending -> sold, in the answer and at once in getPet and listPets', async () => {
    const petId = await addPet(server);
    const order = await placed(petId);
    const { data, response } = await complete(order.id);
    expect(response.status).toBe(200);
    expect(data).toEqual({ ...order, status: 'completed', updatedAt: expect.stringMatching(ISO_MS) });
    expect(Date.parse(data!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(order.createdAt));
    expect(response.headers.get('api-stability')).toBe('experimental');
    expect((await getPet(petId)).status).toBe('sold');
    expect(await listPetIds('sold')).toContain(petId);
    expect(await listPetIds('pending')).not.toContain(petId);
    expect((await getOrder(order.id)).data).toEqual(data);
    await expectStatusesAgree(server.app.database.pool);
  });

  it('cancel: placed -> cancelled, the pet pending -> available, and the pet can be ordered again', async () => {
    const petId = await addPet(server);
    const order = await placed(petId);
    const { data, response } = await cancel(order.id);
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ id: order.id, petId, status: 'cancelled' });
    expect((await getPet(petId)).status).toBe('available');
    expect(await listPetIds('available')).toContain(petId);
    const again = await placed(petId);
    expect(again.id).toBeGreaterThan(order.id);
    expect((await getPet(petId)).status).toBe('pending');
    await expectStatusesAgree(server.app.database.pool);
  });

  // Every transition from a final state: 409 naming both states, and nothing changes.
  it.each([
    ['completed', 'complete', 'completed'],
    ['completed', 'cancel', 'cancelled'],
    ['cancelled', 'complete', 'completed'],
    ['cancelled', 'cancel', 'cancelled'],
  ] as const)('refuses a %s order to %s with 409 invalid_order_transition', async (state, action, target) => {
    const petId = await addPet(server);
    const order = await placed(petId);
    const settled = (await (state === 'completed' ? complete(order.id) : cancel(order.id))).data!;
    const petBefore = await petStatus(server, petId);

    const { error, response } = await (action === 'complete' ? complete(order.id) : cancel(order.id));
    expect(response.status).toBe(409);
    expect(error).toEqual({
      code: 'invalid_order_transition',
      message: `Order ${order.id} cannot go from ${state} to ${target}: only a placed order can.`,
      status: 409,
    });
    expect(response.headers.get('api-stability')).toBe('experimental');
    expect((await getOrder(order.id)).data).toEqual(settled);
    expect(await petStatus(server, petId)).toBe(petBefore);
  });

  it.each(['complete', 'cancel'])('answers 404 order_not_found to %s an order that does not exist', async (action) => {
    const res = await answered(action === 'complete' ? complete(987_654_321) : cancel(987_654_321));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'order_not_found', message: 'Order 987654321 not found.', status: 404 });
  });

  it('ignores a JSON body sent anyway, and refuses one of another media type', async () => {
    const order = await placed(await addPet(server));
    const withBody = await server.request(`/v1/store/orders/${order.id}/cancel`, { body: { status: 'completed' } });
    expect([withBody.status, withBody.body.status]).toEqual([200, 'cancelled']);
    const text = await server.request(`/v1/store/orders/${order.id}/complete`, { body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
  });
});

describe('stability markers', () => {
  // Every operation's marker, on the wire and in the document: stability.test.ts.
  it('mark every order response experimental, 429 included, and no stable operation', async () => {
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 100 });
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const res = await server.request('/v1/store/orders', { key });
      statuses.push(res.status);
      expect(res.headers.get('api-stability')).toBe('experimental');
    }
    expect(statuses).toEqual([200, 200, 429]);
    for (const path of ['/v1/pets', '/v1/pets/1']) expect((await server.request(path)).headers.get('api-stability')).toBeNull();
    expect((await server.request('/v1/pets', { body: { name: 'Stable', categoryId: 1 } })).headers.get('api-stability')).toBeNull();
  });
});

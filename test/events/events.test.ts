import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { readAllEvents, waitForEvents, WEBHOOK_TEST_ENV, type EventBody } from '../helpers/events.js';

const summary = (events: EventBody[]) => events.map((e) => `${e.type} ${e.data.object.id} ${e.data.object.status}`);

describe('events: one per committed change, readable by the accounts it belongs to only', () => {
  let server: TestServer;
  let shelter: string;
  let adopter: string;
  let stranger: string;
  let shelterEvents: EventBody[];
  let adopterEvents: EventBody[];
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    server = await startTestServer(WEBHOOK_TEST_ENV);
    [shelter, adopter, stranger] = await Promise.all([server.createKey('business'), server.createKey('business'), server.createKey('business')]);
    const pet = async (name: string) => (await server.request('/v1/pets', { key: shelter, body: { name, categoryId: 1 } })).body.id as number;
    ids.p = await pet('Rex');
    expect((await server.request(`/v1/pets/${ids.p}`, { key: shelter, method: 'PATCH', body: { name: 'Rex II' } })).status).toBe(200);
    // Refused changes: another account's update (403), a stale If-Match (412).
    expect((await server.request(`/v1/pets/${ids.p}`, { key: adopter, method: 'PATCH', body: { name: 'Mine' } })).status).toBe(403);
    expect((await server.request(`/v1/pets/${ids.p}`, { key: shelter, method: 'DELETE', headers: { 'if-match': '"99"' } })).status).toBe(412);
    ids.o1 = (await server.request('/v1/store/orders', { key: adopter, body: { petId: ids.p } })).body.id;
    expect((await server.request(`/v1/store/orders/${ids.o1}/complete`, { key: adopter, method: 'POST' })).status).toBe(200);
    // Refused: the pet is sold (409), the order is no longer placed (409).
    expect((await server.request('/v1/store/orders', { key: stranger, body: { petId: ids.p } })).status).toBe(409);
    expect((await server.request(`/v1/store/orders/${ids.o1}/cancel`, { key: adopter, method: 'POST' })).status).toBe(409);
    ids.q = await pet('Tom');
    ids.o2 = (await server.request('/v1/store/orders', { key: adopter, body: { petId: ids.q } })).body.id;
    expect((await server.request(`/v1/store/orders/${ids.o2}/cancel`, { key: adopter, method: 'POST' })).status).toBe(200);
    expect((await server.request(`/v1/pets/${ids.q}`, { key: shelter, method: 'DELETE' })).status).toBe(204);
    shelterEvents = await waitForEvents(server, shelter, 12);
    adopterEvents = await waitForEvents(server, adopter, 4);
  });
  afterAll(() => server?.close());

  it("the pets' creator reads every change to its pets and to orders for them, oldest first, and nothing refused", () => {
    expect(summary(shelterEvents)).toEqual([
      `pet.created ${ids.p} available`,
      `pet.updated ${ids.p} available`,
      `order.placed ${ids.o1} placed`,
      `pet.updated ${ids.p} pending`,
      `order.completed ${ids.o1} completed`,
      `pet.updated ${ids.p} sold`,
      `pet.created ${ids.q} available`,
      `order.placed ${ids.o2} placed`,
      `pet.updated ${ids.q} pending`,
      `order.cancelled ${ids.o2} cancelled`,
      `pet.updated ${ids.q} available`,
      `pet.deleted ${ids.q} available`,
    ]);
    expect(shelterEvents[1]!.data.object).toEqual({ id: ids.p, name: 'Rex II', categoryId: 1, status: 'available' });
    expect(shelterEvents[4]!.data.object).toMatchObject({ id: ids.o1, petId: ids.p, status: 'completed' });
    expect(new Set(shelterEvents.map((e) => e.id)).size).toBe(12);
    for (const e of shelterEvents) expect(e.id).toMatch(/^evt_[1-9][0-9]*$/);
  });

  it("the adopter reads its orders' events only, not the pets'; a stranger reads none", async () => {
    expect(summary(adopterEvents)).toEqual([`order.placed ${ids.o1} placed`, `order.completed ${ids.o1} completed`, `order.placed ${ids.o2} placed`, `order.cancelled ${ids.o2} cancelled`]);
    expect(await readAllEvents(server, stranger)).toEqual([]);
  });

  it('getEvent answers the event to its readers and 404 event_not_found to anyone else', async () => {
    const petCreated = shelterEvents[0]!;
    const orderPlaced = shelterEvents[2]!;
    expect((await server.request(`/v1/events/${petCreated.id}`, { key: shelter })).body).toEqual(petCreated);
    expect((await server.request(`/v1/events/${orderPlaced.id}`, { key: adopter })).body).toEqual(orderPlaced);
    for (const [key, id] of [[adopter, petCreated.id], [stranger, orderPlaced.id], [shelter, 'evt_999999999']] as const) {
      const res = await server.request(`/v1/events/${id}`, { key });
      expect([res.status, res.body.code, res.headers.get('api-stability')]).toEqual([404, 'event_not_found', null]);
    }
    expect((await server.request('/v1/events/42', { key: shelter })).status).toBe(400);
  });

  it('pages by Link with the same limit and type, and the type filter keeps only that type', async () => {
    const first = await server.request<EventBody[]>('/v1/events?limit=5', { key: shelter });
    expect(first.body.map((e) => e.id)).toEqual(shelterEvents.slice(0, 5).map((e) => e.id));
    expect(first.headers.get('link')).toMatch(/^<http:\/\/127\.0\.0\.1:\d+\/v1\/events\?limit=5&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
    expect((await readAllEvents(server, shelter, 'limit=5')).map((e) => e.id)).toEqual(shelterEvents.map((e) => e.id));
    const updates = await readAllEvents(server, shelter, 'limit=2&type=pet.updated');
    expect(updates.map((e) => e.id)).toEqual(shelterEvents.filter((e) => e.type === 'pet.updated').map((e) => e.id));
    expect(updates).toHaveLength(5);
    const res = await server.request('/v1/events?cursor=bm90LWEtY3Vyc29y', { key: shelter });
    expect([res.status, res.body.code]).toEqual([400, 'invalid_cursor']);
  });

  it('needs events:read: a key without it gets 403 insufficient_scope; account:manage keys hold it', async () => {
    const made = await server.request('/v1/account/api-keys', { key: shelter, body: { name: 'pets only', scopes: ['pets:read'] } });
    expect(made.status).toBe(201);
    const res = await server.request('/v1/events', { key: made.body.secret });
    expect([res.status, res.body.code, res.headers.get('www-authenticate')]).toEqual([403, 'insufficient_scope', 'Bearer realm="animal-store", error="insufficient_scope", scope="events:read"']);
    const account = await server.request('/v1/account/api-keys?limit=1', { key: shelter });
    expect(account.body[0].scopes).toEqual(expect.arrayContaining(['account:manage', 'events:read', 'webhooks:manage']));
  });
  it('a replayed createPet (same Idempotency-Key) writes no second event', async () => {
    const key = await server.createKey('business');
    const send = () => server.request('/v1/pets', { key, headers: { 'idempotency-key': 'once' }, body: { name: 'Once', categoryId: 2 } });
    const [first, second] = [await send(), await send()];
    expect([first.status, second.status, second.headers.get('idempotent-replayed')]).toEqual([201, 201, 'true']);
    const marker = await server.request('/v1/pets', { key, body: { name: 'Marker', categoryId: 2 } });
    expect(marker.status).toBe(201);
    // Once the later create's event is visible, the first one's are too (they are listed in transaction order).
    const events = await waitForEvents(server, key, 2);
    expect(summary(events)).toEqual([`pet.created ${first.body.id} available`, `pet.created ${marker.body.id} available`]);
  });
});

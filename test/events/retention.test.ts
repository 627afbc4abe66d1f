import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteOldEvents } from '../../src/events/retention.js';
import { EVENT_RETENTION_DAYS } from '../../src/limits.js';
import { createEndpoint, startReceiver, waitForEvents, WEBHOOK_TEST_ENV, type Receiver } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * What is past its retention is deleted, and nothing younger: events older than 30 days with
 * their recipients and delivery attempts (Idempotency-Keys: test/idempotency/retention.test.ts).
 * Ages are made by moving created_at back in the database, so no test waits for them.
 */
describe('event retention (deleteOldEvents)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let key: string;
  const count = async (sql: string, params: unknown[] = []) => (await server.app.database.pool.query<{ n: number }>(sql, params)).rows[0]!.n;
  const age = (id: number, interval: string) => server.app.database.pool.query(`UPDATE events SET created_at = now() - $2::interval WHERE id = $1`, [id, interval]);

  beforeAll(async () => {
    server = await startTestServer(WEBHOOK_TEST_ENV);
    receiver = await startReceiver();
    key = await server.createKey('business');
    await createEndpoint(server, key, receiver.url, ['pet.created']);
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it(`deletes events older than ${EVENT_RETENTION_DAYS} days with their recipients and attempts; a younger one stays readable`, async () => {
    for (const name of ['Old', 'Young']) expect((await server.request('/v1/pets', { key, body: { name, categoryId: 1 } })).status).toBe(201);
    const [old, young] = await waitForEvents(server, key, 2);
    const id = (e: { id: string }) => Number(e.id.slice('evt_'.length));
    expect(await waitFor(async () => (await count(`SELECT count(*)::int AS n FROM webhook_deliveries`)) === 2, 20_000)).toBe(true); // both delivered
    await age(id(old!), `${EVENT_RETENTION_DAYS} days 1 minute`);
    await age(id(young!), `${EVENT_RETENTION_DAYS - 1} days`);

    expect(await deleteOldEvents(server.app.database.pool, new Date())).toBe(1);

    expect((await server.request(`/v1/events/${old!.id}`, { key })).status).toBe(404);
    expect((await server.request(`/v1/events/${young!.id}`, { key })).status).toBe(200);
    expect((await server.request('/v1/events', { key })).body.map((e: { id: string }) => e.id)).toEqual([young!.id]);
    for (const table of ['event_recipients', 'webhook_deliveries']) {
      expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE event_id = $1`, [id(old!)])).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE event_id = $1`, [id(young!)])).toBe(1);
    }
  });
});

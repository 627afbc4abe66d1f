import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteOldEvents, deleteOldIdempotencyKeys } from '../../src/db/retention.js';
import { EVENT_RETENTION_DAYS, IDEMPOTENCY_RETENTION_HOURS } from '../../src/limits.js';
import { createEndpoint, startReceiver, waitForEvents, WEBHOOK_TEST_ENV, type Receiver } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * What is past its retention is deleted, and nothing younger: events older than 30 days with
 * their recipients and delivery attempts, Idempotency-Keys older than 24 hours. Ages are made by
 * moving created_at back in the database, so no test waits for them.
 */
describe('retention (deleteOldEvents, deleteOldIdempotencyKeys)', () => {
  let server: TestServer;
  let receiver: Receiver;
  let key: string;
  const count = async (sql: string, params: unknown[] = []) => (await server.app.database.pool.query<{ n: number }>(sql, params)).rows[0]!.n;
  const age = (table: string, interval: string, id: number | string, column = 'id') =>
    server.app.database.pool.query(`UPDATE ${table} SET created_at = now() - $2::interval WHERE ${column} = $1`, [id, interval]);

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
    await age('events', `${EVENT_RETENTION_DAYS} days 1 minute`, id(old!));
    await age('events', `${EVENT_RETENTION_DAYS - 1} days`, id(young!));

    expect(await deleteOldEvents(server.app.database.pool, new Date())).toBe(1);

    expect((await server.request(`/v1/events/${old!.id}`, { key })).status).toBe(404);
    expect((await server.request(`/v1/events/${young!.id}`, { key })).status).toBe(200);
    expect((await server.request('/v1/events', { key })).body.map((e: { id: string }) => e.id)).toEqual([young!.id]);
    for (const table of ['event_recipients', 'webhook_deliveries']) {
      expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE event_id = $1`, [id(old!)])).toBe(0);
      expect(await count(`SELECT count(*)::int AS n FROM ${table} WHERE event_id = $1`, [id(young!)])).toBe(1);
    }
  });

  it(`deletes Idempotency-Keys older than ${IDEMPOTENCY_RETENTION_HOURS} hours: the same key then makes a new pet; a younger key still replays`, async () => {
    const create = (idempotencyKey: string) => server.request('/v1/pets', { key, body: { name: 'Keyed', categoryId: 1 }, headers: { 'idempotency-key': idempotencyKey } });
    const first = { old: await create('retention-old'), young: await create('retention-young') };
    await age('idempotency_keys', `${IDEMPOTENCY_RETENTION_HOURS} hours 1 minute`, 'retention-old', 'key');
    await age('idempotency_keys', `${IDEMPOTENCY_RETENTION_HOURS - 1} hours`, 'retention-young', 'key');

    expect(await deleteOldIdempotencyKeys(server.app.database.pool, new Date())).toBe(1);

    const again = { old: await create('retention-old'), young: await create('retention-young') };
    expect(again.old.status).toBe(201);
    expect(again.old.body.id).not.toBe(first.old.body.id);
    expect(again.old.headers.get('idempotent-replayed')).toBeNull();
    expect(again.young.body.id).toBe(first.young.body.id);
    expect(again.young.headers.get('idempotent-replayed')).toBe('true');
  });
});

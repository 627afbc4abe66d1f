import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { createEndpoint, waitForEvent, WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { seriesBoundSeconds } from '../../src/events/handlers.js';
import { loadConfig } from '../../src/config.js';

/**
 * redeliverEvent's bounds (openapi.yaml): one open series of an event per endpoint, 100 series per
 * account per hour. No delivery workers here (WEBHOOK_CONCURRENCY=0), so a series stays open until
 * the test ends it; time is moved in the database rather than waited for.
 */
describe('redeliverEvent is bounded per event and endpoint, and per account and hour', () => {
  let server: TestServer;
  const sql = <T = any>(text: string, values: unknown[] = []) => server.app.database.pool.query<T & object>(text, values).then((r) => r.rows);
  const redeliver = (key: string, eventId: string) => server.request(`/v1/events/${eventId}/redeliver`, { key, method: 'POST' });
  const openSeries = async (eventId: string) =>
    (await sql<{ endpoint: number }>('SELECT endpoint_id::int AS endpoint FROM webhook_redeliveries WHERE event_id = $1 AND ended_at IS NULL ORDER BY endpoint_id', [Number(eventId.slice(4))])).map((r) => r.endpoint);
  const queuedRedeliveries = async () => (await sql<{ n: number }>(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-delivery' AND data ? 'redelivery'`))[0]!.n;
  const newEvent = async (key: string, name: string) => {
    const id = (await server.request('/v1/pets', { key, body: { name, categoryId: 1 } })).body.id as number;
    return (await waitForEvent(server, key, (e) => e.data.object.id === id, 'type=pet.created&limit=100')).id;
  };

  beforeAll(async () => {
    server = await startTestServer({ ...WEBHOOK_TEST_ENV, WEBHOOK_CONCURRENCY: '0' });
  });
  afterAll(() => server?.close());

  it('a second call while every endpoint has the event open is 409 redelivery_in_progress and queues nothing; a new endpoint still gets its series', async () => {
    const key = await server.createKey('business');
    const a = await createEndpoint(server, key, 'http://127.0.0.1:9/a');
    const b = await createEndpoint(server, key, 'http://127.0.0.1:9/b');
    const eventId = await newEvent(key, 'Rex');
    const before = await queuedRedeliveries();

    expect((await redeliver(key, eventId)).status).toBe(202);
    expect(await openSeries(eventId)).toEqual([a.id, b.id]);
    const refused = await redeliver(key, eventId);
    expect([refused.status, refused.body.code]).toEqual([409, 'redelivery_in_progress']);
    expect(refused.body.message).toContain(`(${a.id}, ${b.id})`);
    expect(await queuedRedeliveries()).toBe(before + 2);

    // Only the endpoint without an open series is queued.
    const c = await createEndpoint(server, key, 'http://127.0.0.1:9/c');
    expect((await redeliver(key, eventId)).status).toBe(202);
    expect(await openSeries(eventId)).toEqual([a.id, b.id, c.id]);
    expect(await queuedRedeliveries()).toBe(before + 3);
    expect((await redeliver(key, eventId)).status).toBe(409);
  });

  it('a series open longer than any delivery schedule lasts (its jobs lost) no longer blocks the next', async () => {
    const key = await server.createKey('business');
    const a = await createEndpoint(server, key, 'http://127.0.0.1:9/a');
    const eventId = await newEvent(key, 'Tom');
    expect((await redeliver(key, eventId)).status).toBe(202);
    expect((await redeliver(key, eventId)).status).toBe(409);
    const bound = seriesBoundSeconds(loadConfig({ ...WEBHOOK_TEST_ENV }).webhooks);
    // Just inside the bound it still blocks; past it, it is ended and a new one starts.
    await sql(`UPDATE webhook_redeliveries SET created_at = now() - make_interval(secs => $2) WHERE event_id = $1`, [Number(eventId.slice(4)), bound - 60]);
    expect((await redeliver(key, eventId)).status).toBe(409);
    await sql(`UPDATE webhook_redeliveries SET created_at = now() - make_interval(secs => $2) WHERE event_id = $1`, [Number(eventId.slice(4)), bound + 60]);
    expect((await redeliver(key, eventId)).status).toBe(202);
    const rows = await sql<{ open: boolean }>('SELECT ended_at IS NULL AS open FROM webhook_redeliveries WHERE endpoint_id = $1 ORDER BY created_at', [a.id]);
    expect(rows.map((r) => r.open)).toEqual([false, true]);
  });

  it('the 101st series within an hour is 429 redelivery_budget_exhausted with Retry-After, queues nothing, and the hour passing lifts it', async () => {
    const key = await server.createKey('business');
    const endpoint = await createEndpoint(server, key, 'http://127.0.0.1:9/hook');
    const first = await newEvent(key, 'Kit');
    const second = await newEvent(key, 'Max');
    const account = (await server.request('/v1/account', { key })).body.id as number;
    // 99 series of the first event started (and ended) within the hour.
    await sql(
      `INSERT INTO webhook_redeliveries (series, account_id, event_id, endpoint_id, created_at, ended_at)
       SELECT gen_random_uuid(), $1, $2, $3, now() - interval '10 minutes', now() - interval '9 minutes' FROM generate_series(1, 99)`,
      [account, Number(first.slice(4)), endpoint.id],
    );
    expect((await redeliver(key, second)).status).toBe(202);
    const queued = await queuedRedeliveries();

    const refused = await redeliver(key, first);
    expect([refused.status, refused.body.code]).toEqual([429, 'redelivery_budget_exhausted']);
    // The oldest of the hour's series (10 minutes old) leaves it in 50 minutes.
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(2990);
    expect(retryAfter).toBeLessThanOrEqual(3000);
    expect(await queuedRedeliveries()).toBe(queued);
    expect(await openSeries(first)).toEqual([]);

    await sql(`UPDATE webhook_redeliveries SET created_at = created_at - interval '1 hour' WHERE account_id = $1`, [account]);
    expect((await redeliver(key, first)).status).toBe(202);
    expect(await openSeries(first)).toEqual([endpoint.id]);
  });

  it('deleting every endpoint and creating new ones does not reset the budget: the hour\'s 100 series still count, ended, and block no endpoint', async () => {
    const key = await server.createKey('business');
    const a = await createEndpoint(server, key, 'http://127.0.0.1:9/a');
    const b = await createEndpoint(server, key, 'http://127.0.0.1:9/b');
    const first = await newEvent(key, 'Bob');
    const second = await newEvent(key, 'Ace');
    const account = (await server.request('/v1/account', { key })).body.id as number;
    const budget = async () =>
      (await sql<{ used: number; open: number; detached: number }>(
        `SELECT count(*)::int AS used, count(*) FILTER (WHERE ended_at IS NULL)::int AS open, count(*) FILTER (WHERE endpoint_id IS NULL)::int AS detached
           FROM webhook_redeliveries WHERE account_id = $1 AND created_at > now() - interval '1 hour'`,
        [account],
      ))[0]!;
    // 98 series of the first event started (and ended) within the hour, then two more, still open, of the second: 100.
    await sql(
      `INSERT INTO webhook_redeliveries (series, account_id, event_id, endpoint_id, created_at, ended_at)
       SELECT gen_random_uuid(), $1, $2, $3, now() - interval '10 minutes', now() - interval '9 minutes' FROM generate_series(1, 98)`,
      [account, Number(first.slice(4)), a.id],
    );
    expect((await redeliver(key, second)).status).toBe(202);
    expect(await openSeries(second)).toEqual([a.id, b.id]);
    expect(await budget()).toEqual({ used: 100, open: 2, detached: 0 });
    expect((await redeliver(key, first)).status).toBe(429);

    for (const endpoint of [a, b]) expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'DELETE' })).status).toBe(204);
    const c = await createEndpoint(server, key, 'http://127.0.0.1:9/c');
    const d = await createEndpoint(server, key, 'http://127.0.0.1:9/d');
    // The deleted endpoints' series are kept, detached from them; the two still open ended with them.
    expect(await budget()).toEqual({ used: 100, open: 0, detached: 100 });
    const queued = await queuedRedeliveries();

    for (const eventId of [first, second]) {
      const refused = await redeliver(key, eventId);
      expect([refused.status, refused.body.code]).toEqual([429, 'redelivery_budget_exhausted']);
      expect(refused.body.message).toContain('has started 100 redeliveries in the last hour');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(2990);
    }
    expect(await queuedRedeliveries()).toBe(queued);
    expect(await budget()).toEqual({ used: 100, open: 0, detached: 100 });

    // Once the hour has passed, the new endpoints each get a series: the detached ones block neither.
    await sql(`UPDATE webhook_redeliveries SET created_at = created_at - interval '1 hour' WHERE account_id = $1`, [account]);
    expect((await redeliver(key, second)).status).toBe(202);
    expect(await openSeries(second)).toEqual([c.id, d.id]);
    expect(await queuedRedeliveries()).toBe(queued + 2);
    expect(await budget()).toEqual({ used: 2, open: 2, detached: 0 });
  });
});

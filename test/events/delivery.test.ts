import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { createEndpoint, startReceiver, waitForEvents, WEBHOOK_TEST_ENV, type EventBody, type Receiver } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';

// Generous bounds that only tell a hang: events and deliveries wait for older transactions anywhere on the shared test cluster.
const HANG = 45_000;

describe('webhook delivery: signed, retried, disabled on 410, never redirected', () => {
  let server: TestServer;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
  const newPet = async (key: string, name = 'Rex') => (await server.request('/v1/pets', { key, body: { name, categoryId: 1 } })).body.id as number;
  const deliveries = async (key: string, endpointId: number) => (await server.request(`/v1/webhook-endpoints/${endpointId}/deliveries`, { key })).body as any[];
  const waitForDeliveries = async (key: string, endpointId: number, count: number) => {
    let found: any[] = [];
    expect(await waitFor(async () => (found = await deliveries(key, endpointId)).length >= count, HANG)).toBe(true);
    return found;
  };

  beforeAll(async () => {
    server = await startTestServer(WEBHOOK_TEST_ENV);
  });
  afterAll(async () => {
    // Receivers first: a delivery still hanging on one ends at once, so the server's workers stop without waiting it out.
    await Promise.all(receivers.map((r) => r.close()));
    await server?.close();
  });

  it('a receiver written from docs/WEBHOOKS.md verifies the signature with standardwebhooks; the body is the event, webhook-id its id', async () => {
    const key = await server.createKey('business');
    const hook = await receiver();
    const endpoint = await createEndpoint(server, key, hook.url);
    const petId = await newPet(key);
    expect(await waitFor(() => hook.received.length >= 1, HANG)).toBe(true);
    const [{ headers, body }] = hook.received as [(typeof hook.received)[0]];
    // As the docs show it: the raw body and the three headers, the endpoint's secret.
    const wh = new Webhook(endpoint.secret);
    const verified = wh.verify(body, { 'webhook-id': headers['webhook-id'] as string, 'webhook-timestamp': headers['webhook-timestamp'] as string, 'webhook-signature': headers['webhook-signature'] as string }) as EventBody;
    expect(verified.type).toBe('pet.created');
    expect(verified.data.object).toEqual({ id: petId, name: 'Rex', categoryId: 1, status: 'available' });
    expect(headers['content-type']).toBe('application/json');
    expect(headers['webhook-id']).toBe(verified.id);
    expect((await server.request(`/v1/events/${verified.id}`, { key })).body).toEqual(verified);
    // Another secret, or a changed body, does not verify.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(body, headers as Record<string, string>)).toThrow();
    expect(() => wh.verify(body.replace('Rex', 'Tom'), headers as Record<string, string>)).toThrow();
    const log = await waitForDeliveries(key, endpoint.id, 1);
    expect(log).toEqual([{ id: expect.any(Number), eventId: verified.id, attempt: 1, responseStatus: 200, durationMs: expect.any(Number), error: null, createdAt: expect.any(String) }]);
    expect(hook.received).toHaveLength(1);
    const metric = (name: string) => server.app.metricsRegistry.getSingleMetricAsString(name);
    expect(await metric('animal_store_webhook_deliveries_total')).toMatch(/outcome="delivered"} [1-9]/);
    expect(await metric('animal_store_webhook_commit_to_delivery_seconds')).toMatch(/_count [1-9]/);
    expect(await metric('animal_store_webhook_queue_depth')).toMatch(/state="waiting"} \d+/);
  });

  it('sends only the subscribed types, to the accounts the event belongs to', async () => {
    const [shelter, adopter] = await Promise.all([server.createKey('business'), server.createKey('business')]);
    const [shelterHook, adopterHook] = await Promise.all([receiver(), receiver()]);
    const shelterEndpoint = await createEndpoint(server, shelter, shelterHook.url, ['order.placed']);
    const adopterEndpoint = await createEndpoint(server, adopter, adopterHook.url, ['*']);
    const petId = await newPet(shelter);
    const order = await server.request('/v1/store/orders', { key: adopter, body: { petId } });
    expect(order.status).toBe(201);
    expect(await waitFor(() => shelterHook.received.length >= 1 && adopterHook.received.length >= 1, HANG)).toBe(true);
    // Everything for the shelter is queued with the order's commit: the adopter's delivery done, the shelter's is too by now or soon.
    await waitForEvents(server, shelter, 3);
    const types = (r: Receiver) => r.received.map((x) => JSON.parse(x.body).type);
    expect(types(shelterHook)).toEqual(['order.placed']);
    expect(types(adopterHook)).toEqual(['order.placed']);
    // Jobs are queued with the change for subscribed endpoints only: one each, whenever they run.
    const jobs = async (endpointId: number) =>
      (await server.app.database.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-delivery' AND (data->>'endpointId')::int = $1`, [endpointId])).rows[0].n;
    expect([await jobs(shelterEndpoint.id), await jobs(adopterEndpoint.id)]).toEqual([1, 1]);
  });

  it('retries after a 500 with the same webhook-id, and logs both attempts, newest first', async () => {
    const key = await server.createKey('business');
    const hook = await receiver();
    hook.answers.push(500);
    const endpoint = await createEndpoint(server, key, hook.url);
    await newPet(key);
    const log = await waitForDeliveries(key, endpoint.id, 2);
    expect(log.map((d) => [d.attempt, d.responseStatus, d.error])).toEqual([[2, 200, null], [1, 500, 'status 500']]);
    expect(hook.received).toHaveLength(2);
    expect(hook.received[1]!.headers['webhook-id']).toBe(hook.received[0]!.headers['webhook-id']);
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body.status).toBe('enabled');
  });

  it('410 Gone disables the endpoint at once, with a reason; later events are not sent to it', async () => {
    const key = await server.createKey('business');
    const [gone, alive] = await Promise.all([receiver(), receiver()]);
    gone.answers.push(410);
    const endpoint = await createEndpoint(server, key, gone.url);
    await createEndpoint(server, key, alive.url);
    await newPet(key, 'First');
    expect(await waitFor(async () => (await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body.status === 'disabled', HANG)).toBe(true);
    const disabled = (await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body;
    expect(disabled.disabledReason).toBe('The endpoint answered 410 Gone.');
    await newPet(key, 'Second');
    expect(await waitFor(() => alive.received.length >= 2, HANG)).toBe(true);
    expect(gone.received).toHaveLength(1);
    expect((await deliveries(key, endpoint.id)).map((d) => d.responseStatus)).toEqual([410]);
  });

  it('an endpoint failing everything for WEBHOOK_DISABLE_AFTER_SECONDS (5 days) is disabled with a reason; for less it is not; re-enabling starts the count again', async () => {
    const key = await server.createKey('business');
    const failing = await receiver('/hook', (_req, res) => res.writeHead(500).end());
    const endpoint = await createEndpoint(server, key, failing.url);
    const failingSince = async () =>
      (await server.app.database.pool.query(`SELECT extract(epoch FROM now() - failing_since)::int AS seconds FROM webhook_endpoints WHERE id = $1`, [endpoint.id])).rows[0].seconds as number | null;
    // The outage began this long ago: moved back in the database rather than waited for.
    const backdate = (seconds: number) => server.app.database.pool.query(`UPDATE webhook_endpoints SET failing_since = now() - make_interval(secs => $2) WHERE id = $1`, [endpoint.id, seconds]);
    const status = async () => (await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body;
    const FIVE_DAYS = 432_000;

    await newPet(key, 'First'); // three attempts (WEBHOOK_RETRY_DELAYS_SECONDS=0,0), all 500
    await waitForDeliveries(key, endpoint.id, 3);
    expect(await failingSince()).toBeLessThan(60);
    await backdate(FIVE_DAYS - 60);
    await newPet(key, 'Second');
    await waitForDeliveries(key, endpoint.id, 6);
    expect((await status()).status).toBe('enabled');

    await backdate(FIVE_DAYS + 60);
    await newPet(key, 'Third');
    expect(await waitFor(async () => (await status()).status === 'disabled', HANG)).toBe(true);
    expect((await status()).disabledReason).toMatch(/^Every delivery failed from \S+ for 432000 seconds; the last: status 500\.$/);
    // The attempt that disabled it is the last: 7 in all.
    expect((await deliveries(key, endpoint.id)).map((d) => d.responseStatus)).toEqual(Array(7).fill(500));

    const enabled = await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'PATCH', body: { status: 'enabled' } });
    expect(enabled.body).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(await failingSince()).toBeNull();
  });

  it('never follows a redirect: a 302 to another address is a failed attempt and the other address hears nothing', async () => {
    const key = await server.createKey('business');
    const target = await receiver();
    const redirecting = await receiver('/hook', (_req, res) => {
      res.writeHead(302, { location: target.url });
      res.end();
    });
    const endpoint = await createEndpoint(server, key, redirecting.url);
    await newPet(key);
    // WEBHOOK_RETRY_DELAYS_SECONDS=0,0: three attempts in all.
    const log = await waitForDeliveries(key, endpoint.id, 3);
    expect(log.map((d) => [d.attempt, d.responseStatus, d.error])).toEqual([[3, 302, 'status 302'], [2, 302, 'status 302'], [1, 302, 'status 302']]);
    expect(redirecting.received).toHaveLength(3);
    expect(target.received).toHaveLength(0);
  });

  it('redeliverEvent answers 202 and sends the event again with the same webhook-id; another account gets 404', async () => {
    const key = await server.createKey('business');
    const hook = await receiver();
    const endpoint = await createEndpoint(server, key, hook.url);
    await newPet(key);
    const [event] = await waitForEvents(server, key, 1);
    expect(await waitFor(() => hook.received.length >= 1, HANG)).toBe(true);
    const res = await server.request(`/v1/events/${event!.id}/redeliver`, { key, method: 'POST' });
    expect([res.status, res.headers.get('api-stability')]).toEqual([202, null]);
    expect(await waitFor(() => hook.received.length >= 2, HANG)).toBe(true);
    expect(hook.received.map((r) => r.headers['webhook-id'])).toEqual([event!.id, event!.id]);
    expect((await waitForDeliveries(key, endpoint.id, 2)).map((d) => d.attempt)).toEqual([1, 1]);
    const stranger = await server.createKey('business');
    const refused = await server.request(`/v1/events/${event!.id}/redeliver`, { key: stranger, method: 'POST' });
    expect([refused.status, refused.body.code]).toEqual([404, 'event_not_found']);
  });

  it('after rotateWebhookSecret, deliveries carry two signatures: the new secret and the old both verify', async () => {
    const key = await server.createKey('business');
    const hook = await receiver();
    const endpoint = await createEndpoint(server, key, hook.url);
    const rotated = await server.request(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key, method: 'POST' });
    await newPet(key);
    expect(await waitFor(() => hook.received.length >= 1, HANG)).toBe(true);
    const { headers, body } = hook.received[0]!;
    expect((headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
    for (const secret of [rotated.body.secret, endpoint.secret]) {
      expect((new Webhook(secret).verify(body, headers as Record<string, string>) as EventBody).type).toBe('pet.created');
    }
  });
  it('bounds hostile receivers: one that never answers times out, one that sends 50 MB is cut off, neither delays another endpoint', async () => {
    const key = await server.createKey('business');
    const silent = await receiver('/hook', () => {
      /* never answers */
    });
    const flood = await receiver('/hook', (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(1024 * 1024, 120);
      let sent = 0;
      const pump = () => {
        while (sent < 50 && res.write(chunk)) sent++;
        if (sent < 50) res.once('drain', pump);
        else res.end();
      };
      res.on('error', () => {});
      pump();
    });
    const healthy = await receiver();
    const [slowEndpoint, floodEndpoint] = [await createEndpoint(server, key, silent.url), await createEndpoint(server, key, flood.url)];
    const healthyEndpoint = await createEndpoint(server, key, healthy.url);
    await newPet(key);
    const [healthyAttempt] = await waitForDeliveries(key, healthyEndpoint.id, 1);
    const silentLog = await waitForDeliveries(key, slowEndpoint.id, 1);
    expect(silentLog.at(-1)).toMatchObject({ attempt: 1, responseStatus: null, error: 'timeout after 10000 ms' });
    expect(silentLog.at(-1).durationMs).toBeGreaterThanOrEqual(10_000);
    const floodLog = await waitForDeliveries(key, floodEndpoint.id, 1);
    expect(floodLog.at(-1)).toMatchObject({ attempt: 1, responseStatus: 500, error: 'status 500' });
    // The healthy endpoint's attempt ended before the silent one's timed out (WEBHOOK_TIMEOUT_SECONDS, 10 by default): it did not wait behind it.
    expect(healthyAttempt.responseStatus).toBe(200);
    expect(Date.parse(healthyAttempt.createdAt)).toBeLessThan(Date.parse(silentLog.at(-1).createdAt));
  });
});

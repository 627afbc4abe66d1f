import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAllowedAddress } from '../../src/webhooks/targets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { createEndpoint, startReceiver, type Receiver } from '../helpers/events.js';
import { waitFor } from '../helpers/poll.js';

// A public address as a literal, so that no DNS is needed to accept it.
const PUBLIC_URL = 'https://93.184.215.14/hook';

describe('SSRF: webhooks never reach loopback, private, link-local or reserved addresses', () => {
  let server: TestServer;
  let key: string;
  let hook: Receiver;

  beforeAll(async () => {
    // No WEBHOOK_ALLOW_PRIVATE_TARGETS; an endpoint is disabled at its first failure.
    server = await startTestServer({ WEBHOOK_RETRY_DELAYS_SECONDS: '0', WEBHOOK_DISABLE_AFTER_SECONDS: '0', WEBHOOK_POLL_SECONDS: '0.5', WEBHOOK_TIMEOUT_SECONDS: '2' });
    key = await server.createKey('business');
    hook = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await hook?.close();
  });

  it('createWebhookEndpoint refuses each with 400 webhook_url_not_allowed, and stores nothing', async () => {
    const urls = [
      'http://127.0.0.1/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/x', 'http://localhost:8080/x',
      'http://[::ffff:127.0.0.1]/x', 'http://100.64.0.1/x', 'http://0.0.0.0/x', 'http://192.168.1.1/x', 'http://[fd00::1]/x', 'https://2130706433/x',
    ];
    for (const url of urls) {
      const res = await server.request('/v1/webhook-endpoints', { key, body: { url, eventTypes: ['*'] } });
      expect([url, res.status, res.body.code]).toEqual([url, 400, 'webhook_url_not_allowed']);
    }
    expect((await server.request('/v1/webhook-endpoints', { key })).body).toEqual([]);
  });

  it('accepts a public address, and updateWebhookEndpoint refuses a private one, leaving the URL as it was', async () => {
    const endpoint = await createEndpoint(server, key, PUBLIC_URL);
    const res = await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'PATCH', body: { url: 'http://172.16.0.9/x' } });
    expect([res.status, res.body.code]).toEqual([400, 'webhook_url_not_allowed']);
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key })).body.url).toBe(PUBLIC_URL);
    expect((await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key, method: 'DELETE' })).status).toBe(204);
  });

  it('checks again at delivery, against the address connected to: a URL whose host now resolves to loopback gets nothing, and the endpoint is disabled', async () => {
    // As if DNS changed after creation: endpoints made with a public URL, then pointed at the receiver behind the API's back.
    const byName = await createEndpoint(server, key, PUBLIC_URL);
    const byAddress = await createEndpoint(server, key, PUBLIC_URL);
    const port = new URL(hook.url).port;
    await server.app.database.pool.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [byName.id, `http://localhost:${port}/hook`]);
    await server.app.database.pool.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [byAddress.id, `http://127.0.0.1:${port}/hook`]);
    expect((await server.request('/v1/pets', { key, body: { name: 'Rex', categoryId: 1 } })).status).toBe(201);
    const status = async (id: number) => (await server.request(`/v1/webhook-endpoints/${id}`, { key })).body;
    expect(await waitFor(async () => (await status(byName.id)).status === 'disabled' && (await status(byAddress.id)).status === 'disabled', 20_000)).toBe(true);
    for (const id of [byName.id, byAddress.id]) {
      const log = (await server.request(`/v1/webhook-endpoints/${id}/deliveries`, { key })).body;
      expect(log).toHaveLength(1);
      expect(log[0]).toMatchObject({ attempt: 1, responseStatus: null, error: expect.stringMatching(/^address not allowed: /) });
      expect((await status(id)).disabledReason).toMatch(/^Every delivery failed from .* for 0 seconds; the last: address not allowed: /);
    }
    expect(hook.received).toHaveLength(0);
  });

  it('judges addresses by range, IPv4 inside IPv6 included', () => {
    const allowed = ['8.8.8.8', '93.184.215.14', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8'];
    const refused = ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.0.1', '100.64.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '255.255.255.255',
      '::', '::1', 'fe80::1', 'fd00::1', 'ff02::1', '::ffff:10.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', 'not an address'];
    expect(allowed.filter((a) => !isAllowedAddress(a))).toEqual([]);
    expect(refused.filter((a) => isAllowedAddress(a))).toEqual([]);
  });
});

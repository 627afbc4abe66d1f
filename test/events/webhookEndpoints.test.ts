import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT } from '../../src/limits.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { createEndpoint, WEBHOOK_TEST_ENV } from '../helpers/events.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('webhook endpoints: create, list, get, update, rotate, delete, each on the own account only', () => {
  let server: TestServer;
  let owner: string;
  let other: string;

  beforeAll(async () => {
    server = await startTestServer(WEBHOOK_TEST_ENV);
    [owner, other] = await Promise.all([server.createKey('business'), server.createKey('free')]);
  });
  afterAll(() => server?.close());

  it('createWebhookEndpoint answers 201 with the secret once; get and list never show it', async () => {
    const res = await server.request('/v1/webhook-endpoints', { key: owner, body: { url: 'https://example.com/hook', eventTypes: ['order.placed', 'pet.created'], description: 'shelter' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('api-stability')).toBe('beta');
    const { secret, ...endpoint } = res.body;
    expect(secret).toMatch(SECRET);
    expect(endpoint).toEqual({ id: expect.any(Number), url: 'https://example.com/hook', eventTypes: ['order.placed', 'pet.created'], description: 'shelter', status: 'enabled', disabledReason: null, createdAt: expect.any(String) });
    const got = await server.request(`/v1/webhook-endpoints/${endpoint.id}`, { key: owner });
    expect(got.body).toEqual(endpoint);
    expect(got.text).not.toContain('whsec_');
    const list = await server.request('/v1/webhook-endpoints', { key: owner });
    expect(list.body).toEqual([endpoint]);
    // The secret is stored sealed, not as given.
    const stored = (await server.app.database.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0].secret;
    expect(stored).toMatch(/^v1:/);
    expect(stored).not.toContain(secret.slice(6));
  });

  it("another account's endpoint is 404 webhook_endpoint_not_found for every operation, and unchanged", async () => {
    const mine = await createEndpoint(server, owner, 'https://example.com/mine');
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/v1/webhook-endpoints/${mine.id}`],
      ['PATCH', `/v1/webhook-endpoints/${mine.id}`, { status: 'disabled' }],
      ['DELETE', `/v1/webhook-endpoints/${mine.id}`],
      ['POST', `/v1/webhook-endpoints/${mine.id}/rotate-secret`],
      ['GET', `/v1/webhook-endpoints/${mine.id}/deliveries`],
    ];
    for (const [method, path, body] of attempts) {
      const res = await server.request(path, { key: other, method, body });
      expect([method, res.status, res.body.code]).toEqual([method, 404, 'webhook_endpoint_not_found']);
    }
    expect((await server.request('/v1/webhook-endpoints', { key: other })).body).toEqual([]);
    expect((await server.request(`/v1/webhook-endpoints/${mine.id}`, { key: owner })).body.status).toBe('enabled');
  });

  it('updateWebhookEndpoint merges a patch (merge-patch+json or json); disabling says why, enabling clears it', async () => {
    const ep = await createEndpoint(server, owner, 'https://example.com/a', ['pet.created']);
    const patched = await server.request(`/v1/webhook-endpoints/${ep.id}`, {
      key: owner, method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: 'disabled', eventTypes: ['*'] }),
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ url: 'https://example.com/a', eventTypes: ['*'], status: 'disabled', disabledReason: 'Disabled with updateWebhookEndpoint.' });
    const enabled = await server.request(`/v1/webhook-endpoints/${ep.id}`, { key: owner, method: 'PATCH', body: { status: 'enabled', url: 'https://example.org/b', description: 'moved' } });
    expect(enabled.body).toMatchObject({ url: 'https://example.org/b', description: 'moved', eventTypes: ['*'], status: 'enabled', disabledReason: null });
    const invalid = await server.request(`/v1/webhook-endpoints/${ep.id}`, { key: owner, method: 'PATCH', body: { url: null } });
    expect([invalid.status, invalid.body.code]).toEqual([400, 'validation_failed']);
  });

  it('rotateWebhookSecret answers a new secret; deleteWebhookEndpoint 204, then 404', async () => {
    const ep = await createEndpoint(server, owner, 'https://example.com/r');
    const rotated = await server.request(`/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key: owner, method: 'POST' });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(SECRET);
    expect(rotated.body.secret).not.toBe(ep.secret);
    expect((await server.request(`/v1/webhook-endpoints/${ep.id}`, { key: owner, method: 'DELETE' })).status).toBe(204);
    const again = await server.request(`/v1/webhook-endpoints/${ep.id}`, { key: owner, method: 'DELETE' });
    expect([again.status, again.body.code]).toEqual([404, 'webhook_endpoint_not_found']);
  });

  it(`at most ${MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT} endpoints per account: the next is 409 too_many_webhook_endpoints, saying how many`, async () => {
    const key = await server.createKey('free');
    const made = await Promise.all(
      Array.from({ length: MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT }, (_, i) => server.request('/v1/webhook-endpoints', { key, body: { url: `https://example.com/${i}`, eventTypes: ['*'] } })),
    );
    expect(made.map((r) => r.status)).toEqual(Array(MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT).fill(201));
    const res = await server.request('/v1/webhook-endpoints', { key, body: { url: 'https://example.com/over', eventTypes: ['*'] } });
    expect([res.status, res.body.code, res.body.message]).toEqual([
      409,
      'too_many_webhook_endpoints',
      `The account already has ${MAX_WEBHOOK_ENDPOINTS_PER_ACCOUNT} webhook endpoints; delete one first.`,
    ]);
    const page = await server.request('/v1/webhook-endpoints?limit=10', { key });
    expect(page.body).toHaveLength(10);
    expect(page.headers.get('link')).toMatch(/\/v1\/webhook-endpoints\?limit=10&cursor=/);
  });

  it('needs webhooks:manage: a key without it gets 403 insufficient_scope', async () => {
    const made = await server.request('/v1/account/api-keys', { key: owner, body: { name: 'reader', scopes: ['events:read'] } });
    const res = await server.request('/v1/webhook-endpoints', { key: made.body.secret });
    expect([res.status, res.body.code]).toEqual([403, 'insufficient_scope']);
    expect((await server.request('/v1/events', { key: made.body.secret })).status).toBe(200);
  });

  it('rejects a body that is not an endpoint: ftp URL, empty eventTypes, unknown type, unknown property', async () => {
    for (const body of [
      { url: 'ftp://example.com/x', eventTypes: ['*'] },
      { url: 'https://example.com/x', eventTypes: [] },
      { url: 'https://example.com/x', eventTypes: ['pet.eaten'] },
      { url: 'https://example.com/x', eventTypes: ['*'], secret: 'whsec_mine' },
    ]) {
      const res = await server.request('/v1/webhook-endpoints', { key: owner, body });
      expect([res.status, res.body.code]).toEqual([400, 'validation_failed']);
    }
  });
});

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEndpoint, WEBHOOK_TEST_ENV } from '../helpers/events.js';
import { createPet } from '../helpers/pets.js';
import { storedState } from '../helpers/storedState.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/*
 * U+0000 cannot be stored in Postgres text: every string of every JSON body that holds one is
 * refused by the body parser with 400 validation_failed naming the field, before any handler.
 */
let server: TestServer;
let petId: number;
let endpointId: number;
let keyId: number;
beforeAll(async () => {
  server = await startTestServer(WEBHOOK_TEST_ENV);
  petId = (await createPet(server)).id;
  endpointId = (await createEndpoint(server, server.key, 'https://example.com/hook')).id;
  keyId = (await server.request('/v1/account/api-keys', { body: { name: 'rollable' } })).body.id;
});
afterAll(() => server?.close());

const stored = () => storedState(server);

const merge = { 'content-type': 'application/merge-patch+json' };
/** [operation, method, path, body (with one NUL), the field the message names, extra headers]. */
const cases = (): Array<[string, string, string, unknown, string, Record<string, string>?]> => [
  ['createPet', 'POST', '/v1/pets', { name: 'Re\u0000x', categoryId: 1 }, 'body/name', { 'idempotency-key': 'nul-create' }],
  ['updatePet', 'PATCH', `/v1/pets/${petId}`, { name: '\u0000' }, 'body/name', merge],
  ['placeOrder', 'POST', '/v1/store/orders', { petId, ['note\u0000']: 1 }, 'body', { 'idempotency-key': 'nul-order' }],
  ['createApiKey', 'POST', '/v1/account/api-keys', { name: 'ci\u0000' }, 'body/name'],
  ['createApiKey', 'POST', '/v1/account/api-keys', { name: 'ci', scopes: ['pets:read', 'pets:write\u0000'] }, 'body/scopes/1'],
  ['createApiKey', 'POST', '/v1/account/api-keys', { name: 'ci', expiresAt: '2999-01-01T00:00:00.000Z\u0000' }, 'body/expiresAt'],
  ['rollApiKey', 'POST', `/v1/account/api-keys/${keyId}/roll`, { ['expiresInSeconds\u0000']: 0 }, 'body'],
  ['createWebhookEndpoint', 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/h\u0000', eventTypes: ['*'] }, 'body/url'],
  ['createWebhookEndpoint', 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/h', eventTypes: ['*'], description: 'a\u0000b' }, 'body/description'],
  ['createWebhookEndpoint', 'POST', '/v1/webhook-endpoints', { url: 'https://example.com/h', eventTypes: ['pet.created\u0000'] }, 'body/eventTypes/0'],
  ['updateWebhookEndpoint', 'PATCH', `/v1/webhook-endpoints/${endpointId}`, { description: '\u0000' }, 'body/description'],
  ['updateWebhookEndpoint', 'PATCH', `/v1/webhook-endpoints/${endpointId}`, { url: 'https://example.org/\u0000' }, 'body/url'],
  ['updateWebhookEndpoint', 'PATCH', `/v1/webhook-endpoints/${endpointId}`, { status: 'disabled\u0000' }, 'body/status'],
  ['updateWebhookEndpoint', 'PATCH', `/v1/webhook-endpoints/${endpointId}`, { eventTypes: ['*\u0000'] }, 'body/eventTypes/0'],
];

describe('a NUL (U+0000) in any string of a body', () => {
  it('is 400 validation_failed naming the field, for every text field of every write operation, and nothing is stored', async () => {
    const before = await stored();
    const answers = [];
    for (const [operation, method, path, body, field, headers] of cases()) {
      const res = await server.request(path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
      const named = Object.keys(body as object).some((k) => k.includes('\u0000'))
        ? `${field} has a property name that contains U+0000 (NUL)`
        : `${field} must not contain U+0000 (NUL)`;
      answers.push([operation, res.status, res.body]);
      expect([operation, res.status, res.body]).toEqual([operation, 400, { code: 'validation_failed', message: named, status: 400 }]);
    }
    expect(answers).toHaveLength(14);
    expect(await stored()).toEqual(before);
  });

  it('at any depth, and as the body itself', async () => {
    const before = await stored();
    const deep = await server.request('/v1/pets', { body: JSON.stringify({ name: 'Rex', categoryId: 1, x: [{ 'a/b': ['ok', 'n\u0000'] }] }), headers: { 'content-type': 'application/json' } });
    expect(deep.body).toEqual({ code: 'validation_failed', message: 'body/x/0/a~1b/1 must not contain U+0000 (NUL)', status: 400 });
    const bare = await server.request('/v1/pets', { body: '"\\u0000"', headers: { 'content-type': 'application/json' } });
    expect(bare.body).toEqual({ code: 'validation_failed', message: 'body must not contain U+0000 (NUL)', status: 400 });
    expect(await stored()).toEqual(before);
  });

  it('in the Idempotency-Key header never reaches the service: the HTTP parser answers 400', async () => {
    const before = await stored();
    const body = '{"name":"Rex","categoryId":1}';
    const raw = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(new URL(server.baseUrl).port), '127.0.0.1', () => {
        socket.write(
          `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\n` +
            `Idempotency-Key: a\u0000b\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
      });
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('end', () => resolve(data));
      socket.on('error', () => resolve(data));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({ code: 'bad_request', status: 400 });
    expect(await stored()).toEqual(before);
  });
});

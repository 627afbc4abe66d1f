import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationsById, queryParameterNames } from '../../src/openapi/document.js';
import { waitForEvents } from '../helpers/events.js';
import { doc, resolve } from '../helpers/schema.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

// Every (operation, query parameter) pair of the document, as the test above finds them.
const CHECKED = [
  'listApiKeys:cursor', 'listApiKeys:limit', 'listEvents:cursor', 'listEvents:limit', 'listEvents:type', 'listOrders:cursor', 'listOrders:limit', 'listOrders:status',
  'listPets:categoryId', 'listPets:cursor', 'listPets:limit', 'listPets:status', 'listWebhookDeliveries:cursor', 'listWebhookDeliveries:limit',
  'listWebhookEndpoints:cursor', 'listWebhookEndpoints:limit',
];

const refused = (name: string) => ({ code: 'validation_failed', message: `query parameter '${name}' is not defined for this operation`, status: 400 });

describe('a query parameter the operation does not define is refused (docs/API-BEHAVIOUR.md)', () => {
  it('on listPets, listEvents (with a name another operation has) and getAccount (which has none): 400 naming it', async () => {
    for (const [path, name] of [['/v1/pets?status=available&colour=red', 'colour'], ['/v1/events?categoryId=1', 'categoryId'], ['/v1/account?expand=plan', 'expand']] as const) {
      const res = await server.request(path);
      expect([path, res.status, res.body]).toEqual([path, 400, refused(name)]);
    }
  });

  it('the known ones still work, alone or together', async () => {
    await server.request('/v1/pets', { body: { name: 'Known', categoryId: 1 }, headers: { 'idempotency-key': 'known-1' } });
    const pets = await server.request('/v1/pets?status=available&categoryId=1&limit=1');
    expect([pets.status, pets.body.map((p: { name: string }) => p.name)]).toEqual([200, ['Known']]);
    // An event is listed once the transactions begun before it have ended: read until it is.
    const events = await waitForEvents(server, server.key, 1, 'limit=1&type=pet.created');
    expect(events.map((e) => e.type)).toEqual(['pet.created']);
    expect((await server.request('/v1/account')).status).toBe(200);
  });

  it('every query parameter the document defines passes the check, on every operation that defines it', async () => {
    const checked: string[] = [];
    for (const { method, path, operation } of operationsById(doc).values()) {
      for (const name of queryParameterNames(doc, { method, path, operation })) {
        const parameter = (operation.parameters as object[]).map((p) => resolve(p)).find((p) => p.name === name && p.in === 'query');
        const schema = resolve(parameter.schema);
        const value = schema.default ?? schema.enum?.[0] ?? schema.items?.enum?.[0] ?? (schema.type === 'integer' ? (schema.minimum ?? 1) : 'x');
        const res = await server.request(`/v1${path.replace(/\{\w+\}/g, '1')}?${name}=${encodeURIComponent(String(value))}`, { method: method.toUpperCase() });
        expect(res.body?.message ?? '', `${operation.operationId} ${name}`).not.toMatch(/is not defined for this operation/);
        checked.push(`${operation.operationId}:${name}`);
      }
    }
    expect(checked.sort()).toEqual(CHECKED);
  });

  it('changes nothing: a create with one stores nothing', async () => {
    const before = await server.petCount();
    const res = await server.request('/v1/pets?dryRun=true', { body: { name: 'Nope', categoryId: 1 }, headers: { 'idempotency-key': 'dry-1' } });
    expect([res.status, res.body]).toEqual([400, refused('dryRun')]);
    expect(await server.petCount()).toBe(before);
  });

  it('comes after authentication, applies to HEAD, and quotes a control character as ?', async () => {
    const anonymous = await server.request('/v1/pets?colour=red', { key: null });
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 'unauthorized']);
    // Raw fetch: the contract check reads bodies, and HEAD has none.
    const head = await fetch(`${server.baseUrl}/v1/pets?colour=red`, { method: 'HEAD', headers: { authorization: `Bearer ${server.key}` } });
    expect([head.status, await head.text()]).toEqual([400, '']);
    const control = await server.request('/v1/pets?a%01b=1');
    expect([control.status, control.body]).toEqual([400, refused('a?b')]);
  });

  it('outside /v1 nothing changes: /healthz, /openapi.json and /docs take any query', async () => {
    for (const path of ['/healthz?probe=1', '/openapi.json?v=2', '/docs/?url=x']) {
      expect([path, (await fetch(`${server.baseUrl}${path}`)).status]).toEqual([path, 200]);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedHeaders } from '../../src/api/routes.js';
import { stabilityOf } from '../../src/openapi/document.js';
import { operationsById, type OperationObject } from '../../src/openapi/document.js';
import { doc, resolve } from '../helpers/schema.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'https://store.test' });
});
afterAll(() => server.close());

const operations = [...operationsById(doc).values()];
const idsOf = (level: string) => operations.filter(({ operation }) => stabilityOf(operation) === level).map(({ operation }) => operation.operationId).sort();
// Answered before any route is chosen (a request too slow, or headers too large): no operation to mark.
const BEFORE_ROUTING = new Set(['408', '431']);

describe('stability levels in the document (docs/API-BEHAVIOUR.md, Stability)', () => {
  it('orders are experimental, webhook endpoints beta, everything else stable', () => {
    expect(idsOf('experimental')).toEqual(['cancelOrder', 'completeOrder', 'getOrder', 'listOrders', 'placeOrder']);
    expect(idsOf('beta')).toEqual([
      'createWebhookEndpoint', 'deleteWebhookEndpoint', 'getWebhookEndpoint', 'listWebhookDeliveries', 'listWebhookEndpoints', 'rotateWebhookSecret', 'updateWebhookEndpoint',
    ]);
    expect(idsOf('stable')).toEqual([
      'createApiKey', 'createPet', 'deletePet', 'getAccount', 'getEvent', 'getPet', 'listApiKeys', 'listEvents', 'listPets', 'redeliverEvent', 'revokeApiKey', 'rollApiKey', 'updatePet',
    ]);
  });

  it('one badge at most; summary and description say the level of a marked operation, and only then', () => {
    for (const { operation } of operations) {
      const level = stabilityOf(operation) === 'stable' ? undefined : stabilityOf(operation);
      expect((operation['x-badges'] ?? []).length, operation.operationId).toBe(level ? 1 : 0);
      expect(/\((experimental|beta)\)$/.exec(operation.summary as string)?.[1], operation.operationId).toBe(level);
      const opening = /^\*\*(Experimental|Beta)\*\*/.exec(operation.description as string)?.[1]?.toLowerCase();
      expect(opening, operation.operationId).toBe(level);
    }
  });

  it('every response a route answers documents API-Stability exactly when the operation is marked', () => {
    expect(resolve(doc.components.headers['API-Stability']).schema.enum).toEqual(['experimental', 'beta']);
    let checked = 0;
    for (const { operation } of operations) {
      for (const [status, response] of Object.entries<any>(operation.responses as object)) {
        if (BEFORE_ROUTING.has(status)) continue;
        const headers = resolve(response).headers ?? {};
        expect('API-Stability' in headers, `${operation.operationId} ${status}`).toBe(stabilityOf(operation) !== 'stable');
        expect('Deprecation' in headers && 'Sunset' in headers, `${operation.operationId} ${status}`).toBe(operation['x-deprecation'] !== undefined);
        checked++;
      }
    }
    expect(checked).toBe(228);
  });
});

describe('API-Stability, Deprecation and Sunset on the wire', () => {
  // Every operation, answered twice: without a key (401, before anything else) and with an unknown query parameter (400).
  it.each(operations.map(({ method, path, operation }) => [operation.operationId, method, path, operation] as const))(
    '%s sends what its marker and x-deprecation say, errors included',
    async (operationId, method, path, operation) => {
      const url = `/v1${path.replace(/\{\w+\}/g, '1')}`;
      const expected = stabilityOf(operation) === 'stable' ? null : stabilityOf(operation);
      const deprecation = operation['x-deprecation'];
      for (const [opts, status] of [[{ key: null }, 401], [{}, 400]] as const) {
        const res = await server.request(`${url}?${status === 400 ? 'undefinedParameter=1' : ''}`, { ...opts, method: method.toUpperCase() });
        expect([res.status, res.headers.get('api-stability')], operationId).toEqual([status, expected]);
        expect([res.headers.get('deprecation'), res.headers.get('sunset')], operationId).toEqual(
          deprecation ? [`@${Date.parse(deprecation.since) / 1000}`, new Date(deprecation.sunset).toUTCString()] : [null, null],
        );
      }
    },
  );

  it('a stable operation answering 200 carries none of them', async () => {
    for (const path of ['/v1/pets', '/v1/account', '/v1/events', '/v1/account/api-keys']) {
      const res = await server.request(path);
      expect([path, res.status, res.headers.get('api-stability'), res.headers.get('deprecation')]).toEqual([path, 200, null, null]);
    }
    const beta = await server.request('/v1/webhook-endpoints');
    expect([beta.status, beta.headers.get('api-stability'), beta.headers.get('deprecation')]).toEqual([200, 'beta', null]);
  });
});

describe('documentedHeaders (the one mechanism behind them)', () => {
  const urlOf = (id: string) => `https://store.test/v1/${id}`;
  const beta = { operationId: 'op', 'x-badges': [{ name: 'Beta' }] } satisfies OperationObject;
  const notice = { since: '2027-01-04T00:00:00Z', sunset: '2027-04-05T00:00:00Z', description: 'url becomes read-only' };

  it('a beta operation announcing a change: Deprecation and Sunset, no successor Link unless named', () => {
    expect(documentedHeaders({ ...beta, 'x-deprecation': notice }, urlOf)).toEqual({
      deprecation: '@1799020800', sunset: 'Mon, 05 Apr 2027 00:00:00 GMT', 'api-stability': 'beta',
    });
    expect(documentedHeaders(beta, urlOf)).toEqual({ 'api-stability': 'beta' });
  });

  it('a deprecated operation: Deprecation, Sunset and its successor', () => {
    const deprecated = { operationId: 'op', deprecated: true, 'x-deprecation': { since: notice.since, sunset: notice.sunset, successor: 'listPets' } };
    expect(documentedHeaders(deprecated, urlOf)).toEqual({
      deprecation: '@1799020800', sunset: 'Mon, 05 Apr 2027 00:00:00 GMT', link: '<https://store.test/v1/listPets>; rel="successor-version"',
    });
  });

  it('stops start-up on an x-deprecation a stable operation does not explain, a beta one without what changes, or one without its dates', () => {
    expect(() => documentedHeaders({ operationId: 'op', 'x-deprecation': notice }, urlOf)).toThrow('op has an x-deprecation but is neither deprecated nor beta');
    expect(() => documentedHeaders({ ...beta, 'x-deprecation': { since: notice.since, sunset: notice.sunset } }, urlOf)).toThrow('says what changes');
    expect(() => documentedHeaders({ ...beta, 'x-deprecation': { ...notice, since: undefined as never } }, urlOf)).toThrow('needs since and sunset as dates');
    expect(() => documentedHeaders({ ...beta, 'x-deprecation': { ...notice, sunset: 'in 90 days' } }, urlOf)).toThrow('needs since and sunset as dates');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDocument } from '../../src/openapi/document.js';
import { ALLOWED_HEADERS as DOCUMENT_ALLOWED_HEADERS, EXPOSED_HEADERS as DOCUMENT_EXPOSED_HEADERS } from '../helpers/corsHeaders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const APP = 'https://app.example';
const ALLOWED_HEADERS = DOCUMENT_ALLOWED_HEADERS.join(', ');
const EXPOSED_HEADERS = DOCUMENT_EXPOSED_HEADERS.join(', ');

function preflight(server: TestServer, origin: string, path = '/v1/pets', method = 'POST') {
  return fetch(`${server.baseUrl}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
  });
}

describe('CORS with CORS_ORIGINS', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ CORS_ORIGINS: `${APP},https://other.example` });
  });
  afterAll(() => server?.close());

  it('answers a preflight from a listed origin, without counting it against anyone', async () => {
    const key = await server.createKey('free');
    for (let i = 0; i < 5; i++) {
      const res = await preflight(server, APP);
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, POST');
      expect(res.headers.get('access-control-allow-headers')).toBe(ALLOWED_HEADERS);
      // The anonymous quota of its address as it stands (test/http/rateLimitHeaders.test.ts): untouched.
      expect([res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')]).toEqual(['60', '60']);
    }
    // The key's first counted request: the preflights (sent without credentials, from this address) used nothing.
    const api = await server.request('/v1/pets', { key, headers: { origin: APP } });
    expect(api.headers.get('x-ratelimit-remaining')).toBe('59');
    const anonymous = await server.request('/v1/pets', { key: null });
    expect(anonymous.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it("allows on each path the methods the document gives it, and conditional requests", async () => {
    const res = await preflight(server, APP, '/v1/pets/1', 'PATCH');
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD, PATCH, DELETE');
    expect(res.headers.get('access-control-allow-headers')).toBe(ALLOWED_HEADERS);
    const revoke = await preflight(server, APP, '/v1/account/api-keys/1', 'DELETE');
    expect(revoke.headers.get('access-control-allow-methods')).toBe('DELETE');
    const endpoint = await preflight(server, APP, '/v1/webhook-endpoints/1', 'DELETE');
    expect(endpoint.headers.get('access-control-allow-methods')).toBe('GET, HEAD, PATCH, DELETE');
  });

  it("allows on every path of the document exactly what a 405 there lists in Allow", async () => {
    for (const template of Object.keys(loadDocument().paths)) {
      const path = `/v1${template.replace(/\{\w+\}/g, '1')}`;
      const allowed = (await preflight(server, APP, path)).headers.get('access-control-allow-methods');
      // An OPTIONS that is not a preflight is a method no path has: 405 with Allow.
      const refused = await server.request(path, { method: 'OPTIONS' });
      expect(refused.status, path).toBe(405);
      expect(allowed, path).toBe(refused.headers.get('allow'));
    }
  });

  it('lets the browser read the headers a client needs', async () => {
    const res = await server.request('/v1/pets?limit=1', { headers: { origin: APP } });
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSED_HEADERS);
  });

  it('gives an origin it does not list nothing to read', async () => {
    const res = await preflight(server, 'https://evil.example');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const api = await server.request('/v1/pets', { headers: { origin: 'https://evil.example' } });
    expect(api.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('without CORS_ORIGINS (the default)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('has no CORS: OPTIONS is a method the API does not have', async () => {
    const res = await preflight(server, APP);
    expect(res.status).toBe(405);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

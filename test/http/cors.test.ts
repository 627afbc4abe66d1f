import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const APP = 'https://app.example';

function preflight(server: TestServer, origin: string) {
  return fetch(`${server.baseUrl}/v1/pets`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
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
      expect(res.headers.get('access-control-allow-headers')).toBe('Authorization, Content-Type, Idempotency-Key, X-Request-Id');
      // The anonymous quota of its address as it stands (test/http/rateLimitHeaders.test.ts): untouched.
      expect([res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining')]).toEqual(['60', '60']);
    }
    // The key's first counted request: the preflights (sent without credentials, from this address) used nothing.
    const api = await server.request('/v1/pets', { key, headers: { origin: APP } });
    expect(api.headers.get('x-ratelimit-remaining')).toBe('59');
    const anonymous = await server.request('/v1/pets', { key: null });
    expect(anonymous.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('lets the browser read the headers a client needs', async () => {
    const res = await server.request('/v1/pets?limit=1', { headers: { origin: APP } });
    expect(res.headers.get('access-control-allow-origin')).toBe(APP);
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').split(',').map((h) => h.trim().toLowerCase());
    for (const name of ['link', 'location', 'retry-after', 'x-request-id', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'deprecation', 'sunset']) {
      expect(exposed).toContain(name);
    }
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

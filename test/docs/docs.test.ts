import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  // The default anonymous quota: 60 a minute per address.
  server = await startTestServer();
});
afterAll(() => server?.close());

const RATE_LIMIT_FIELDS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit'];

describe('documentation', () => {
  it('is free to read: 500 requests from one address in a minute all get 200, and the API quota is untouched', async () => {
    const paths = ['/docs', '/docs/', '/openapi.json', '/docs/static/swagger-ui.css', '/docs/static/swagger-initializer.js'];
    const statuses = new Map<number, number>();
    for (let i = 0; i < 500; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: 25 }, (_, j) => fetch(`${server.baseUrl}${paths[(i + j) % paths.length]}`).then(async (r) => (await r.arrayBuffer(), r))),
      );
      for (const res of batch) {
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        for (const name of RATE_LIMIT_FIELDS) expect(res.headers.get(name)).toBeNull();
      }
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: 500 });

    // Same address, no key: still the first request of its anonymous quota.
    const api = await server.request('/v1/pets', { key: null });
    expect(api.status).toBe(401);
    expect(api.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('lets browsers cache the document and the UI for a while', async () => {
    for (const path of ['/openapi.json', '/docs/', '/docs/static/swagger-ui.css']) {
      const res = await fetch(`${server.baseUrl}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('cache-control'), path).toBe('public, max-age=300');
      expect(res.headers.get('x-request-id'), path).toBeTruthy();
    }
  });
});

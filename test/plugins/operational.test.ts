import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadDocument } from '../../src/openapi/document.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'https://pets.test' });
});
afterAll(() => server.close());

describe('operational endpoints and cross-cutting behaviour', () => {
  it('serves openapi.yaml as /openapi.json, with this server listed first', async () => {
    const res = await fetch(`${server.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const served: any = await res.json();
    const doc = loadDocument();
    expect(served.paths).toEqual(JSON.parse(JSON.stringify(doc.paths)));
    expect(served.components).toEqual(JSON.parse(JSON.stringify(doc.components)));
    expect(served.servers).toEqual([{ url: 'https://pets.test/v1', description: 'This server' }, ...doc.servers!]);
    expect(served.paths['/pets/{petId}'].get.deprecated).toBe(true);
  });

  it('serves Swagger UI at /docs without authentication', async () => {
    const res = await fetch(`${server.baseUrl}/docs/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('swagger-ui');
  });

  it('answers /healthz and /readyz without authentication', async () => {
    expect(await (await fetch(`${server.baseUrl}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', rateLimits: 'local' } });
  });

  it.each([
    ['GET', '/v1/nope'],
    ['DELETE', '/v1/nope'],
    ['GET', '/nothing-here'],
  ])('answers an unknown route %s %s with 404 in the Error shape', async (method, path) => {
    const res = await server.request(path, { method });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'not_found', message: `Route ${method} ${path} not found.`, status: 404 });
  });

  it('echoes a sane X-Request-Id and invents one otherwise', async () => {
    const given = await server.request('/v1/pets', { headers: { 'x-request-id': 'trace-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-123');
    const invented = await server.request('/v1/pets', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(invented.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('marks API responses uncacheable and not sniffable', async () => {
    const res = await server.request('/v1/pets');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  // A clock that stays inside one minute, so counted requests never straddle a window.
  server = await startTestServer({}, { clock: manualClock().now });
});
afterAll(() => server?.close());

/** What every error response carries, whichever path produced it. */
function expectErrorEnvelope(res: { status: number; headers: Headers; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ code, message: expect.any(String), status });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe('routing errors inside /v1', () => {
  it('answers a malformed percent-encoding with 400 bad_request before routing', async () => {
    // Not through server.request: the typed contract check wants an operation, and none is matched.
    const res = await fetch(`${server.baseUrl}/v1/pets/%ZZ`, { headers: { authorization: `Bearer ${server.key}` } });
    expectErrorEnvelope({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'bad_request');
  });

  it.each([300, 1000])('answers a %i-character id with 400 validation_failed, not 414', async (length) => {
    const res = await server.request(`/v1/pets/${'1'.repeat(length)}`);
    expectErrorEnvelope(res, 400, 'validation_failed');
    expect(res.body.message).toMatch(/petId/);
  });

  it('answers an id beyond any route parameter length with 400 too', async () => {
    const res = await fetch(`${server.baseUrl}/v1/pets/${'1'.repeat(2000)}`, { headers: { authorization: `Bearer ${server.key}` } });
    expectErrorEnvelope({ status: res.status, headers: res.headers, body: await res.json() }, 400, 'validation_failed');
  });

  it.each([
    ['PUT', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
    ['POST', '/v1/pets/1', 'GET, HEAD, PATCH, DELETE'],
    ['PUT', '/v1/pets', 'GET, HEAD, POST'],
    ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
    ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
  ])('answers %s %s with 405 and Allow: %s', async (method, path, allow) => {
    const res = await server.request(path, { method });
    expectErrorEnvelope(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe(allow);
  });
});

describe('HEAD, wherever GET is (RFC 9110 §9.1)', () => {
  /** Headers that differ between two answers by nature: when, which request, how much quota is left. */
  const varying = new Set(['date', 'x-request-id', 'x-ratelimit-remaining', 'ratelimit', 'keep-alive', 'connection']);
  const stable = (headers: Headers) => Object.fromEntries([...headers].filter(([name]) => !varying.has(name)));

  it.each(['/v1/pets?limit=2', '/v1/pets/1'])('answers HEAD %s as GET, with the same headers and no body', async (path) => {
    await server.request('/v1/pets', { body: { name: 'Head', categoryId: 1 } });
    const key = await server.createKey('free');
    const get = await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const getBody = await get.arrayBuffer();
    const head = await fetch(`${server.baseUrl}${path}`, { method: 'HEAD', headers: { authorization: `Bearer ${key}` } });
    expect(head.status).toBe(200);
    expect(stable(head.headers)).toEqual(stable(get.headers));
    expect(head.headers.get('content-length')).toBe(String(getBody.byteLength));
    expect((await head.arrayBuffer()).byteLength).toBe(0);
    // Counted like the GET: one more request of the key's quota.
    expect([get.headers.get('x-ratelimit-remaining'), head.headers.get('x-ratelimit-remaining')]).toEqual(['59', '58']);
  });

  it('answers HEAD without a key with 401, and no body', async () => {
    const res = await fetch(`${server.baseUrl}/v1/pets`, { method: 'HEAD' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });
});

describe('unknown routes and methods', () => {
  it('counts 404 and 405 inside /v1 against the caller, like any API request', async () => {
    const key = await server.createKey('free');
    const first = await server.request('/v1/nope', { key });
    const second = await server.request('/v1/pets/1', { key, method: 'DELETE' });
    expect(first.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(second.headers.get('x-ratelimit-remaining')).toBe('58');
  });

  it('answers unknown routes outside /v1 with 404 in the Error shape, uncounted', async () => {
    const res = await server.request('/nothing-here');
    expectErrorEnvelope(res, 404, 'not_found');
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('integers in paths and query strings', () => {
  it.each(['1e999', '1'.repeat(400), '0x10', '5.0', '0b11', '+5', ' 5', '1e1'])('refuses limit=%j with 400 validation_failed', async (limit) => {
    const res = await server.request(`/v1/pets?limit=${encodeURIComponent(limit)}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(/querystring\/limit/);
  });

  it.each(['0x10', '1e1', '16.0', '1'.repeat(400)])('refuses the pet id %j with 400 validation_failed', async (id) => {
    const res = await server.request(`/v1/pets/${id}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
  });

  it('still reads plain decimal digits', async () => {
    const created = await server.request('/v1/pets', { body: { name: 'Sixteen', categoryId: 1 } });
    const res = await server.request(`/v1/pets/${created.body.id}`);
    expect(res.status).toBe(200);
    expect((await server.request('/v1/pets?limit=5')).status).toBe(200);
  });
});

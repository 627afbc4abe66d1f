import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { rawExchange as sendRaw } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const rawExchange = (server: TestServer, request: string, ms = 2000) => sendRaw(server.baseUrl, request, ms);

/** The status and Error body of a raw answer. */
function parse(raw: string): { status: number; body: unknown; headers: string } {
  const head = raw.indexOf('\r\n\r\n');
  return { status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1]), headers: raw.slice(0, head), body: JSON.parse(raw.slice(head + 4)) };
}

const errorBody = (code: string, status: number) => ({ code, message: expect.any(String), status });

describe('protocol answers outside any operation, in the Error shape', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({}, { clock: manualClock().now });
  });
  afterAll(() => server?.close());

  it('answers an HTTP/1.1 request without Host with 400 bad_request', async () => {
    const res = parse(await rawExchange(server, `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${server.key}\r\n\r\n`));
    expect([res.status, res.body]).toEqual([400, errorBody('bad_request', 400)]);
    expect(res.headers).toMatch(/\r\nx-request-id: /i);
  });

  it('answers a request with two Host headers with 400 bad_request (RFC 9112 §3.2)', async () => {
    const auth = `Authorization: Bearer ${server.key}\r\n`;
    for (const hosts of ['Host: a\r\nHost: b\r\n', 'Host: a\r\nhost: a\r\n']) {
      for (const version of ['1.1', '1.0']) {
        const res = parse(await rawExchange(server, `GET /v1/pets HTTP/${version}\r\n${hosts}${auth}\r\n`));
        expect([res.status, res.body]).toEqual([400, errorBody('bad_request', 400)]);
      }
    }
    // One Host is served.
    expect(await rawExchange(server, `GET /v1/pets HTTP/1.1\r\nHost: a\r\n${auth}Connection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('still serves an HTTP/1.0 request without Host', async () => {
    const raw = await rawExchange(server, `GET /v1/pets HTTP/1.0\r\nAuthorization: Bearer ${server.key}\r\n\r\n`);
    expect(raw).toMatch(/^HTTP\/1\.[01] 200 /);
  });

  it('answers an Expect it cannot meet with 417 expectation_failed', async () => {
    const res = parse(await rawExchange(server, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n'));
    expect([res.status, res.body]).toEqual([417, errorBody('expectation_failed', 417)]);
  });

  it('answers CONNECT with 501 not_implemented, then closes', async () => {
    const res = parse(await rawExchange(server, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
    expect([res.status, res.body]).toEqual([501, errorBody('not_implemented', 501)]);
  });

  it('counts router errors under /v1 against the caller, and carries the rate-limit fields', async () => {
    const key = await server.createKey('free');
    const statuses: number[] = [];
    let remaining: string | null = null;
    for (let i = 0; i < 61; i++) {
      const res = await fetch(`${server.baseUrl}/v1/pets/%ZZ`, { headers: { authorization: `Bearer ${key}` } });
      statuses.push(res.status);
      remaining = res.headers.get('x-ratelimit-remaining');
      await res.arrayBuffer();
    }
    // The free plan's 60 a minute: 60 × 400 bad_request, then 429.
    expect(statuses.filter((s) => s === 400)).toHaveLength(60);
    expect(statuses.at(-1)).toBe(429);
    expect(remaining).toBe('0');
  });

  it('counts over-long path parameters too', async () => {
    const key = await server.createKey('free');
    const res = await fetch(`${server.baseUrl}/v1/pets/${'1'.repeat(2000)}`, { headers: { authorization: `Bearer ${key}` } });
    expect([res.status, res.headers.get('x-ratelimit-remaining')]).toEqual([400, '59']);
  });
});

describe('CORS with CORS_ORIGINS: preflights only for the document\'s paths', () => {
  const APP = 'https://app.example';
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ CORS_ORIGINS: APP }, { clock: manualClock().now });
  });
  afterAll(() => server?.close());

  const preflight = (path: string) =>
    fetch(`${server.baseUrl}${path}`, { method: 'OPTIONS', headers: { origin: APP, 'access-control-request-method': 'GET' } });

  it('answers an OPTIONS that is not a preflight with 405 and Allow, counted', async () => {
    const res = await server.request('/v1/pets', { method: 'OPTIONS', headers: { origin: APP } });
    expect([res.status, res.body.code, res.headers.get('allow')]).toEqual([405, 'method_not_allowed', 'GET, HEAD, POST']);
    expect(res.headers.get('x-ratelimit-remaining')).not.toBeNull();
  });

  it('answers a preflight for a document path with 204', async () => {
    const res = await preflight('/v1/pets/1');
    expect([res.status, res.headers.get('access-control-allow-origin')]).toEqual([204, APP]);
  });

  it.each(['/v1/unknown', '/metrics', '/docs', '/healthz'])('gives a preflight for %s no CORS answer', async (path) => {
    const res = await preflight(path);
    expect(res.status).not.toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toBeNull();
  });
});

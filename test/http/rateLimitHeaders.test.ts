import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { rawExchange as sendRaw } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/*
 * The rate-limit fields on answers made outside the operations: every answer under /v1 whose
 * caller can be known carries them (the anonymous quota's where no key was read); those made
 * before anything of the request was read as HTTP carry none, as openapi.yaml says.
 */
const APP = 'https://app.example';
let server: TestServer;
beforeAll(async () => {
  // A clock that stands still: no window ends mid-test, so every count is exact.
  server = await startTestServer(
    { CORS_ORIGINS: APP, RATE_LIMIT_ANONYMOUS: '7/70', TRUST_PROXY: '127.0.0.1', REQUEST_TIMEOUT_SECONDS: '1', HEADERS_TIMEOUT_SECONDS: '0.5' },
    { clock: manualClock().now },
  );
});
afterAll(() => server?.close());

// only a hang: Node's own deadlines answer within 2 s
const rawExchange = (request: string) => sendRaw(server.baseUrl, request, 10_000);

/** The status, Error code and rate-limit fields of a raw answer (null: absent). */
function answer(raw: string) {
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  const field = (name: string) => new RegExp(`\\r\\n${name}: ([^\\r]*)`, 'i').exec(head)?.[1] ?? null;
  const body = raw.slice(head.length + 4);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(raw)?.[1]),
    code: body.startsWith('{') ? (JSON.parse(body) as { code: string }).code : null,
    limit: field('x-ratelimit-limit'),
    remaining: field('x-ratelimit-remaining'),
    policy: field('ratelimit-policy'),
    ratelimit: field('ratelimit'),
    reset: field('x-ratelimit-reset'),
  };
}

const FREE = { limit: '60', policy: '"minute";q=60;w=60, "day";q=1000;w=86400' };
const ANONYMOUS = { limit: '7', policy: '"minute";q=7;w=60, "day";q=70;w=86400' };
const NONE = { limit: null, remaining: null, policy: null, ratelimit: null, reset: null };

/** What an ordinary request of the same caller shows: counted exactly once more. */
async function remainingAfter(headers: Record<string, string>): Promise<string | null> {
  const res = await fetch(`${server.baseUrl}/v1/pets`, { headers });
  await res.arrayBuffer();
  return res.headers.get('x-ratelimit-remaining');
}

describe('rate-limit fields on protocol answers under /v1, counted once against the caller', () => {
  const cases: Array<[string, (auth: string) => string, number, string]> = [
    ['400 without Host', (auth) => `GET /v1/pets HTTP/1.1\r\n${auth}\r\n`, 400, 'bad_request'],
    ['400 with two Hosts', (auth) => `GET /v1/pets HTTP/1.1\r\nHost: a\r\nHost: b\r\n${auth}\r\n`, 400, 'bad_request'],
    ['417 for an Expect other than 100-continue', (auth) => `GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n${auth}\r\n`, 417, 'expectation_failed'],
    ['413 for a body over the limit', (auth) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 70000\r\n\r\n`, 413, 'payload_too_large'],
    ['408 for a body that does not arrive in time', (auth) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{`, 408, 'request_timeout'],
  ];

  it.each(cases)("%s: the key's account's limit", async (_name, request, status, code) => {
    const key = await server.createKey('free');
    const res = answer(await rawExchange(request(`Authorization: Bearer ${key}\r\n`)));
    expect(res).toMatchObject({ status, code, ...FREE, remaining: '59', ratelimit: expect.stringMatching(/^"minute";r=59;t=\d+, "day";r=999;t=\d+$/) });
    expect(res.reset).toMatch(/^\d{10}$/);
    expect(await remainingAfter({ authorization: `Bearer ${key}` })).toBe('58');
  });

  // A body request without a key is answered 401 before its body is read: only the others here.
  it.each(cases.slice(0, 3).map((c, i) => [...c, `203.0.113.${10 + i}`] as const))('%s: without a key, the anonymous limit of the address', async (_name, request, status, code, address) => {
    const res = answer(await rawExchange(request(`X-Forwarded-For: ${address}\r\n`)));
    expect(res).toMatchObject({ status, code, ...ANONYMOUS, remaining: '6' });
    expect(await remainingAfter({ 'x-forwarded-for': address })).toBe('5');
  });
});

describe('answers without rate-limit fields: no caller is known (openapi.yaml, X-RateLimit-Limit)', () => {
  it.each([
    ['431 for headers too large', `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ['400 for what is not HTTP', 'GARBAGE\r\n\r\n', 400, 'bad_request'],
    ['408 for headers that do not arrive in time', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n', 408, 'request_timeout'],
    ['501 for CONNECT, which names no path', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 501, 'not_implemented'],
    ['400 without Host outside /v1', 'GET /openapi.json HTTP/1.1\r\n\r\n', 400, 'bad_request'],
  ])('%s', async (_name, request, status, code) => {
    expect(answer(await rawExchange(request))).toEqual({ status, code, ...NONE });
  });
});

describe('CORS preflights', () => {
  it('carry the anonymous limit of the address as it stands, and are not counted', async () => {
    const address = '198.51.100.7';
    const preflight = async () => {
      const res = await fetch(`${server.baseUrl}/v1/pets/1`, {
        method: 'OPTIONS',
        headers: { origin: APP, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization', 'x-forwarded-for': address },
      });
      await res.arrayBuffer();
      return [res.status, res.headers.get('access-control-allow-origin'), res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining'), res.headers.get('ratelimit-policy')];
    };
    expect(await preflight()).toEqual([204, APP, ANONYMOUS.limit, '7', ANONYMOUS.policy]);
    expect(await preflight()).toEqual([204, APP, ANONYMOUS.limit, '7', ANONYMOUS.policy]);
    expect(await remainingAfter({ 'x-forwarded-for': address })).toBe('6');
    expect(await preflight()).toEqual([204, APP, ANONYMOUS.limit, '6', ANONYMOUS.policy]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestOptions } from '../helpers/http.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { nextDayStart, nextMinuteStart, nowSeconds, parseRateLimit, listOne, rateLimitHeaders, sendMany } from './helpers.js';

// The default in-process store (no REDIS_URL), on a clock that stands still unless a test moves it.
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server.close());

const FREE_POLICY = '"minute";q=60;w=60, "day";q=1000;w=86400';
const RATE_LIMIT = /^"minute";r=\d+;t=\d+, "day";r=\d+;t=\d+$/;

/** What the checks below read of a response, and a note on it for failure messages. */
interface Answer {
  status: number;
  headers: Headers;
  note: string;
}

/** A call through the typed client. */
async function typed(call: Promise<{ response: Response; error?: unknown }>): Promise<Answer> {
  const { response, error } = await call;
  return { status: response.status, headers: response.headers, note: JSON.stringify(error ?? null).slice(0, 120) };
}

/** A raw request: for what the typed client cannot send (unknown routes, values outside the schema, other media types). */
async function raw(path: string, opts: RequestOptions): Promise<Answer> {
  const res = await server.request(path, opts);
  return { status: res.status, headers: res.headers, note: res.text.slice(0, 120) };
}

/** Sends one request; returns the response and the second the server's clock read. */
async function send(request: () => Promise<Answer>) {
  const res = await request();
  return { res, now: nowSeconds(clock.now) };
}

/** Checks every rate-limit field of a response, the times exactly. */
function expectRateLimitFields(
  { res, now }: { res: Answer; now: number },
  expected: { status: number; limit: number; remaining: number; dayRemaining: number },
) {
  const where = `${res.status} ${res.note}`;
  expect(res.status, where).toBe(expected.status);
  const h = rateLimitHeaders(res);
  expect(h.limit, where).toBe(String(expected.limit));
  expect(h.remaining, where).toBe(String(expected.remaining));
  // The minute window binds: its reset is the start of the next UTC minute.
  expect(h.reset, where).toBe(String(nextMinuteStart(now)));
  expect(h.policy, where).toBe(FREE_POLICY);
  expect(h.rateLimit, where).toMatch(RATE_LIMIT);
  const parsed = parseRateLimit(h.rateLimit);
  expect(parsed.minute!.r, where).toBe(expected.remaining);
  expect(parsed.day!.r, where).toBe(expected.dayRemaining);
  // t is each window's reset minus the server's clock.
  expect(parsed.minute!.t, where).toBe(nextMinuteStart(now) - now);
  expect(parsed.day!.t, where).toBe(nextDayStart(now) - now);
  expect(parsed.minute!.t).toBeGreaterThanOrEqual(1);
  expect(parsed.minute!.t).toBeLessThanOrEqual(60);
  expect(parsed.day!.t).toBeGreaterThanOrEqual(1);
  expect(parsed.day!.t).toBeLessThanOrEqual(86_400);
}

describe('rate-limit headers', () => {
  it('are on every /v1 response, and Remaining drops by exactly one per admitted request', async () => {
    const key = await server.createKey('free');
    const auth = { headers: { authorization: `Bearer ${key}` } };
    const cases: Array<[number, () => Promise<Answer>]> = [
      [200, () => typed(server.api.GET('/pets', auth))],
      [201, () => typed(server.api.POST('/pets', { body: { name: 'a', categoryId: 1 }, ...auth }))],
      [400, () => raw('/v1/pets?limit=0', { key })],
      [404, () => typed(server.api.GET('/pets/{petId}', { params: { path: { petId: 999999 } }, ...auth }))],
      [404, () => raw('/v1/nope', { key })],
      [413, () => raw('/v1/pets', { key, body: { name: 'a', categoryId: 1, pad: 'x'.repeat(70_000) } })],
      [415, () => raw('/v1/pets', { key, body: '{"name":"a","categoryId":1}', headers: { 'content-type': 'text/plain' } })],
    ];
    let used = 0;
    for (const [status, request] of cases) {
      used++;
      expectRateLimitFields(await send(request), { status, limit: 60, remaining: 60 - used, dayRemaining: 1000 - used });
      // The probes are not counted and carry no rate-limit fields.
      const probe = await fetch(`${server.baseUrl}/healthz`, { headers: { authorization: `Bearer ${key}` } });
      expect(probe.status).toBe(200);
      expect(probe.headers.get('x-ratelimit-remaining')).toBeNull();
      clock.advance(1_000); // a second later each time: t must follow the server's clock
    }

    // Use up the minute: the last admitted request leaves 0, the next one is refused.
    const rest = await sendMany(60 - used - 1, () => listOne(server, key));
    expect(rest.map((r) => r.response.status)).toEqual(Array(60 - used - 1).fill(200));
    const remainings = rest.map((r) => Number(r.response.headers.get('x-ratelimit-remaining'))).sort((a, b) => b - a);
    expect(remainings).toEqual(Array.from({ length: 60 - used - 1 }, (_, i) => 60 - used - 1 - i));
    expectRateLimitFields(await send(() => typed(listOne(server, key))), { status: 200, limit: 60, remaining: 0, dayRemaining: 940 });

    const { response, error } = await listOne(server, key);
    const refused = { res: { status: response.status, headers: response.headers, note: JSON.stringify(error) }, now: nowSeconds(clock.now) };
    expectRateLimitFields(refused, { status: 429, limit: 60, remaining: 0, dayRemaining: 940 });
    expect(error?.code).toBe('rate_limited');
    const retryAfter = Number(response.headers.get('retry-after'));
    const reset = Number(response.headers.get('x-ratelimit-reset'));
    expect(retryAfter).toBe(reset - refused.now);
    expect(retryAfter).toBe(parseRateLimit(response.headers.get('ratelimit')).minute!.t);
  });

  it('are on a 401 (counted by client IP, which defaults to the free numbers)', async () => {
    const noKey = { headers: { authorization: null } };
    const first = await send(() => typed(server.api.GET('/pets', noKey)));
    expect(first.res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
    expectRateLimitFields(first, { status: 401, limit: 60, remaining: 59, dayRemaining: 999 });
    const second = await send(() => typed(server.api.GET('/pets/{petId}', { params: { path: { petId: 1 } }, ...noKey })));
    expectRateLimitFields(second, { status: 401, limit: 60, remaining: 58, dayRemaining: 998 });
  });

  it.each(['/healthz', '/readyz', '/healthz?x=1'])('are absent from %s', async (path) => {
    for (const headers of [{}, { authorization: `Bearer ${server.key}` }] as Array<Record<string, string>>) {
      const res = await fetch(`${server.baseUrl}${path}`, { headers });
      expect(res.status).toBe(200);
      for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit', 'retry-after']) {
        expect(res.headers.get(name), `${path}: ${name}`).toBeNull();
      }
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse, RequestOptions } from '../helpers/http.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { nextDayStart, nextMinuteStart, nowSeconds, parseRateLimit, rateLimitHeaders, sendMany } from './helpers.js';

// The default in-process store (no REDIS_URL), on a clock that stands still unless a test moves it.
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server.close());

const FREE_POLICY = '"minute";q=60;w=60, "day";q=1000;w=86400';
const RATE_LIMIT = /^"minute";r=\d+;t=\d+, "day";r=\d+;t=\d+$/;

/** Sends one request; returns the response and the second the server's clock read. */
async function send(path: string, opts: RequestOptions) {
  const res = await server.request(path, opts);
  return { res, now: nowSeconds(clock.now) };
}

/** Checks every rate-limit field of a response, the times exactly. */
function expectRateLimitFields(
  { res, now }: { res: ApiResponse; now: number },
  expected: { status: number; limit: number; remaining: number; dayRemaining: number },
) {
  const where = `${res.status} ${res.text.slice(0, 120)}`;
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
    const cases: Array<[number, string, RequestOptions]> = [
      [200, '/v1/pets', { key }],
      [201, '/v1/pets', { key, body: { name: 'a', categoryId: 1 } }],
      [400, '/v1/pets?limit=0', { key }],
      [404, '/v1/pets/999999', { key }],
      [404, '/v1/nope', { key }],
      [413, '/v1/pets', { key, body: { name: 'a', categoryId: 1, pad: 'x'.repeat(70_000) } }],
      [415, '/v1/pets', { key, body: '{"name":"a","categoryId":1}', headers: { 'content-type': 'text/plain' } }],
    ];
    let used = 0;
    for (const [status, path, opts] of cases) {
      used++;
      expectRateLimitFields(await send(path, opts), { status, limit: 60, remaining: 60 - used, dayRemaining: 1000 - used });
      // The probes are not counted and carry no rate-limit fields.
      const probe = await fetch(`${server.baseUrl}/healthz`, { headers: { authorization: `Bearer ${key}` } });
      expect(probe.status).toBe(200);
      expect(probe.headers.get('x-ratelimit-remaining')).toBeNull();
      clock.advance(1_000); // a second later each time: t must follow the server's clock
    }

    // Use up the minute: the last admitted request leaves 0, the next one is refused.
    const rest = await sendMany(server, 60 - used - 1, '/v1/pets?limit=1', { key });
    expect(rest.map((r) => r.status)).toEqual(Array(60 - used - 1).fill(200));
    const remainings = rest.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => b - a);
    expect(remainings).toEqual(Array.from({ length: 60 - used - 1 }, (_, i) => 60 - used - 1 - i));
    expectRateLimitFields(await send('/v1/pets?limit=1', { key }), { status: 200, limit: 60, remaining: 0, dayRemaining: 940 });

    const refused = await send('/v1/pets?limit=1', { key });
    expectRateLimitFields(refused, { status: 429, limit: 60, remaining: 0, dayRemaining: 940 });
    expect(refused.res.body.code).toBe('rate_limited');
    const retryAfter = Number(refused.res.headers.get('retry-after'));
    const reset = Number(refused.res.headers.get('x-ratelimit-reset'));
    expect(retryAfter).toBe(reset - refused.now);
    expect(retryAfter).toBe(parseRateLimit(refused.res.headers.get('ratelimit')).minute!.t);
  });

  it('are on a 401 (counted by client IP, which defaults to the free numbers)', async () => {
    const first = await send('/v1/pets', { key: null });
    expect(first.res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
    expectRateLimitFields(first, { status: 401, limit: 60, remaining: 59, dayRemaining: 999 });
    const second = await send('/v1/pets/1', { key: null });
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

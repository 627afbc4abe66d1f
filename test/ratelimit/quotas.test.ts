import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { awayFromMinuteBoundary, cleanupSharedRedis, nextDayStart, nowSeconds, parseRateLimit, sendMany, statuses, storeEnvs } from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe.each(storeEnvs())('quotas with the %s', (_name, env) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(env());
  });
  afterAll(() => server?.close());

  it.each([
    ['free', 60],
    ['pro', 300],
    ['business', 1000],
  ] as const)('a %s key gets exactly %i requests a minute', async (plan, n) => {
    await awayFromMinuteBoundary();
    const key = await server.createKey(plan);
    const admitted = await sendMany(server, n, '/v1/pets?limit=1', { key });
    expect(statuses(admitted)).toEqual(Array(n).fill(200));
    for (const res of admitted) expect(res.headers.get('x-ratelimit-limit')).toBe(String(n));

    const refused = await server.request('/v1/pets?limit=1', { key });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-limit')).toBe(String(n));
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  }, 90_000);

  it('refuses an enterprise key by its day window first, with Retry-After up to 00:00 UTC', async () => {
    await awayFromMinuteBoundary();
    const key = await server.createKey('enterprise', { perMinute: 100, perDay: 5 });
    const admitted = await sendMany(server, 5, '/v1/pets?limit=1', { key }, 1);
    expect(statuses(admitted)).toEqual([200, 200, 200, 200, 200]);
    expect(admitted.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['4', '3', '2', '1', '0']);

    const refused = await server.request('/v1/pets?limit=1', { key });
    const now = nowSeconds();
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('rate_limited');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(nextDayStart(now)));
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Math.abs(retryAfter - (nextDayStart(now) - now))).toBeLessThanOrEqual(2);
  }, 90_000);

  it('does not count refused requests', async () => {
    await awayFromMinuteBoundary();
    const key = await server.createKey('enterprise', { perMinute: 3, perDay: 50 });
    const admitted = await sendMany(server, 3, '/v1/pets?limit=1', { key }, 1);
    expect(statuses(admitted)).toEqual([200, 200, 200]);
    const refused = await sendMany(server, 5, '/v1/pets?limit=1', { key }, 1);
    expect(statuses(refused)).toEqual([429, 429, 429, 429, 429]);
    for (const res of refused) expect(res.body.code).toBe('rate_limited');
    const last = parseRateLimit(refused.at(-1)!.headers.get('ratelimit'));
    expect(last.minute!.r).toBe(0);
    expect(last.day!.r).toBe(47);
  }, 90_000);
});

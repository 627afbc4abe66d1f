import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import type { TestServer } from '../helpers/testServer.js';
import {
  cleanupSharedRedis,
  nextDayStart,
  nextMinuteStart,
  nowSeconds,
  parseRateLimit,
  listOne,
  sendMany,
  startTestServer,
  statuses,
  storeEnvs,
} from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe.each(storeEnvs())('quotas with the %s', (_name, env) => {
  // Time stands still unless a test moves it: no window ends in the middle of a test.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(env(), { clock: clock.now });
  });
  afterAll(() => server?.close());

  it.each([
    ['free', 60],
    ['pro', 300],
    ['business', 1000],
  ] as const)('a %s key gets exactly %i requests a minute', async (plan, n) => {
    const key = await server.createKey(plan);
    const admitted = await sendMany(n, () => listOne(server, key));
    expect(statuses(admitted)).toEqual(Array(n).fill(200));
    for (const { response } of admitted) expect(response.headers.get('x-ratelimit-limit')).toBe(String(n));

    const { response: refused, error } = await listOne(server, key);
    const now = nowSeconds(clock.now);
    expect(refused.status).toBe(429);
    expect(error?.code).toBe('rate_limited');
    // Exactly the rest of the minute: the refusal is by the minute window.
    expect(refused.headers.get('retry-after')).toBe(String(nextMinuteStart(now) - now));
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(nextMinuteStart(now)));
    expect(refused.headers.get('x-ratelimit-limit')).toBe(String(n));
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');

    // At the next minute (not a millisecond before) the key is admitted again.
    clock.advance((nextMinuteStart(now) - now) * 1000 - 1);
    expect((await listOne(server, key)).response.status).toBe(429);
    clock.advance(1);
    const { response: next } = await listOne(server, key);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe(String(n - 1));
  });

  it('refuses an enterprise key by its day window first, with Retry-After up to 00:00 UTC', async () => {
    const key = await server.createKey('enterprise', { perMinute: 100, perDay: 5 });
    const admitted = await sendMany(5, () => listOne(server, key), 1);
    expect(statuses(admitted)).toEqual([200, 200, 200, 200, 200]);
    expect(admitted.map((r) => r.response.headers.get('x-ratelimit-remaining'))).toEqual(['4', '3', '2', '1', '0']);

    const { response: refused, error } = await listOne(server, key);
    const now = nowSeconds(clock.now);
    expect(refused.status).toBe(429);
    expect(error?.code).toBe('rate_limited');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(nextDayStart(now)));
    expect(refused.headers.get('retry-after')).toBe(String(nextDayStart(now) - now));
  });

  it('does not count refused requests', async () => {
    const key = await server.createKey('enterprise', { perMinute: 3, perDay: 50 });
    const admitted = await sendMany(3, () => listOne(server, key), 1);
    expect(statuses(admitted)).toEqual([200, 200, 200]);
    const refused = await sendMany(5, () => listOne(server, key), 1);
    expect(statuses(refused)).toEqual([429, 429, 429, 429, 429]);
    for (const { error } of refused) expect(error?.code).toBe('rate_limited');
    const last = parseRateLimit(refused.at(-1)!.response.headers.get('ratelimit'));
    expect(last.minute!.r).toBe(0);
    expect(last.day!.r).toBe(47);
  });
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import type { TestServer } from '../helpers/testServer.js';
import { withoutRedis } from '../helpers/services.js';
import { cleanupSharedRedis, listOne, REDIS_URL, sendMany, startTestServer, twoInstancesSharingRedis, uniquePrefix } from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe.skipIf(withoutRedis())('two instances sharing Redis', () => {
  // One clock for both instances (as NTP gives them), standing still: no minute ends mid-test.
  const clock = manualClock();
  const { a, b } = twoInstancesSharingRedis(clock.now);

  it('admit exactly one quota between them: 120 concurrent requests of a free key give 60 × 200 and 60 × 429', async () => {
    const key = await a().createKey('free');
    expect((await b().app.accounts.list()).map((k) => k.plan)).toContain('free'); // one database
    let sent = 0;
    const responses = await sendMany(120, () => listOne(sent++ % 2 === 0 ? a() : b(), key), 120); // all at once
    const count = (status: number) => responses.filter((r) => r.response.status === status).length;
    expect({ 200: count(200), 429: count(429) }).toEqual({ 200: 60, 429: 60 });
    // A burst is refused, not banned.
    const codes = responses.filter((r) => r.response.status === 429).map((r) => r.error?.code);
    expect(codes).toEqual(Array(60).fill('rate_limited'));
    // Refusals are shared too: past the grace, the 11th refusal counted across both instances starts the ban.
    clock.advance(2_000);
    const after: Array<string | undefined> = [];
    for (let i = 0; i < 11; i++) after.push((await listOne(i % 2 === 0 ? a() : b(), key)).error?.code);
    expect(after).toEqual([...Array(10).fill('rate_limited'), 'temporarily_banned']);
  });

  it('admit exactly the quota of a busy key that reserves requests in batches', async () => {
    // 2,500 a minute: the first requests reserve 2 at a time, the last ones go to Redis one by one.
    const key = await a().createKey('enterprise', { perMinute: 2500, perDay: 100_000 });
    let sent = 0;
    const responses = await sendMany(2600, () => listOne(sent++ % 2 === 0 ? a() : b(), key), 20);
    const count = (status: number) => responses.filter((r) => r.response.status === status).length;
    expect({ 200: count(200), 429: count(429) }).toEqual({ 200: 2500, 429: 100 });
  });
});

describe.skipIf(withoutRedis())('requests reserved in batches from Redis', () => {
  const clock = manualClock();
  let server: TestServer;
  let prefix: string;
  const redis = new Redis(REDIS_URL, { lazyConnect: true }); // connects on first use: never, when skipped
  beforeAll(async () => {
    prefix = uniquePrefix();
    server = await startTestServer({ REDIS_URL, REDIS_PREFIX: prefix, REDIS_TIMEOUT_MS: '2000' }, { clock: clock.now });
  });
  afterAll(async () => {
    redis.disconnect();
    await server?.close();
  });

  it('a key far from its limits costs one Redis round trip per 50 requests, with exact headers', async () => {
    const key = await server.createKey('enterprise', { perMinute: 50_000, perDay: 1_000_000 });
    const id = (await server.app.accounts.list()).find((k) => k.perMinute === 50_000)!.accountId;
    const counter = async () => Number(await redis.get(`${prefix}{account:${id}}:m:${Math.floor(clock.now() / 60_000)}`));
    const remaining: number[] = [];
    const counters: number[] = [];
    for (let i = 0; i < 51; i++) {
      remaining.push(Number((await listOne(server, key)).response.headers.get('x-ratelimit-remaining')));
      counters.push(await counter());
    }
    // A thousandth of what is left, at most RATE_LIMIT_REDIS_BATCH (100): 50, then 49 more.
    expect(counters.slice(0, 50)).toEqual(Array(50).fill(50));
    expect(counters[50]).toBe(99);
    expect(remaining).toEqual(Array.from({ length: 51 }, (_, i) => 49_999 - i));
  });

  it('a key near its limits goes to Redis for every request', async () => {
    const key = await server.createKey('enterprise', { perMinute: 1500, perDay: 100_000 });
    const id = (await server.app.accounts.list()).find((k) => k.perMinute === 1500)!.accountId;
    for (let i = 1; i <= 3; i++) {
      await listOne(server, key);
      expect(Number(await redis.get(`${prefix}{account:${id}}:m:${Math.floor(clock.now() / 60_000)}`))).toBe(i);
    }
  });
});


import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { cleanupSharedRedis, listOne, statuses, storeEnvs } from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe.each(storeEnvs())('bans with the %s', (_name, env) => {
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    // Defaults: free plan 60/min, ban after 10 refusals counted, 2 s grace after the first refusal.
    server = await startTestServer(env(), { clock: clock.now });
  });
  afterAll(() => server?.close());

  it('refuses a burst sent at once but does not ban it: after Retry-After the next request is 200', async () => {
    const key = await server.createKey('free');
    const burst = await Promise.all(Array.from({ length: 80 }, () => listOne(server, key)));
    const counts = statuses(burst).reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
    expect(counts).toEqual({ 200: 60, 429: 20 });
    const refused = burst.filter((r) => r.response.status === 429);
    expect(refused.map((r) => r.error?.code)).toEqual(Array(20).fill('rate_limited'));
    const retryAfter = Math.max(...refused.map((r) => Number(r.response.headers.get('retry-after'))));

    clock.advance(retryAfter * 1000);
    const next = await listOne(server, key);
    expect(next.response.status).toBe(200);
  });

  it('bans a caller that keeps sending after it could have seen a 429', async () => {
    clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 5_000); // a fresh minute
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 1000 });
    expect(statuses([await listOne(server, key), await listOne(server, key)])).toEqual([200, 200]);
    const first = await listOne(server, key);
    expect(first.error?.code).toBe('rate_limited');
    // Within the grace after the first refusal: refused, not counted toward a ban.
    for (let i = 0; i < 20; i++) expect((await listOne(server, key)).error?.code).toBe('rate_limited');
    clock.advance(2_000);
    // From the grace on, ten more refusals are tolerated, the eleventh starts the ban.
    const codes: Array<string | undefined> = [];
    for (let i = 0; i < 11; i++) codes.push((await listOne(server, key)).error?.code);
    expect(codes).toEqual([...Array(10).fill('rate_limited'), 'temporarily_banned']);
    const banned = await listOne(server, key);
    expect(banned.error?.code).toBe('temporarily_banned');
    expect(Number(banned.response.headers.get('retry-after'))).toBe(900);
  });
});

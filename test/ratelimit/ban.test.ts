import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import type { TestServer } from '../helpers/testServer.js';
import { cleanupSharedRedis, listOne, sendMany, startTestServer, statuses, storeEnvs } from './helpers.js';

afterAll(() => cleanupSharedRedis());

describe.each(storeEnvs())('temporary ban with the %s', (_name, env) => {
  // Time stands still: the refusals all fall in one minute, the one the ban counts them in.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ...env(), RATE_LIMIT_BAN_AFTER: '3', RATE_LIMIT_BAN_SECONDS: '120' }, { clock: clock.now });
  });
  afterAll(() => server?.close());

  it('bans a caller that keeps sending after being refused, and only that caller', async () => {
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 100 });
    const other = await server.createKey('enterprise', { perMinute: 2, perDay: 100 });

    expect(statuses(await sendMany(2, () => listOne(server, key), 1))).toEqual([200, 200]);

    // The first refusal; the ones that count toward a ban come from the grace (2 s) on.
    expect((await listOne(server, key)).error?.code).toBe('rate_limited');
    clock.advance(2_000);
    const refused = await sendMany(3, () => listOne(server, key), 1);
    expect(statuses(refused)).toEqual([429, 429, 429]);
    expect(refused.map((r) => r.error?.code)).toEqual(['rate_limited', 'rate_limited', 'rate_limited']);

    const banned = await listOne(server, key);
    expect(banned.response.status).toBe(429);
    expect(banned.error?.code).toBe('temporarily_banned');
    expect(banned.response.headers.get('retry-after')).toBe('120'); // the whole ban, as it starts

    const still = await listOne(server, key);
    expect(still.response.status).toBe(429);
    expect(still.error?.code).toBe('temporarily_banned');
    // The Redis store times bans with Redis's own key expiry (real time), so only a range here.
    const retryAfter = Number(still.response.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(120);

    // The ban is per caller.
    const { response } = await listOne(server, other);
    expect(response.status).toBe(200);
  });
});

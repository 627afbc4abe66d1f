import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { freePort } from '../helpers/ports.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { fallbackAdmitted } from './helpers.js';

describe('requests admitted while the Redis limiter counts locally', () => {
  // A clock that stands still: every request falls in one minute.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    // Nothing listens on this port: the Redis store falls back to local counting from the first request.
    server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` }, { clock: clock.now });
  });
  afterAll(() => server?.close());

  it('are counted by animal_store_ratelimit_fallback_admitted_total, exactly, refusals left out', async () => {
    expect(await fallbackAdmitted(server)).toBe(0);
    const key = await server.createKey('free'); // 60 a minute
    const statuses = await Promise.all(
      Array.from({ length: 75 }, async () => (await server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } })).response.status),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    expect(((await (await fetch(`${server.baseUrl}/readyz`)).json()) as { checks: { rateLimits: string } }).checks.rateLimits).toBe('local-fallback');
    expect(await fallbackAdmitted(server)).toBe(60);
  });
});

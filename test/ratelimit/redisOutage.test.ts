import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { waitFor } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { killRedisServer, startRedisServer } from '../helpers/redisServer.js';
import { withoutRedisServerBinary } from '../helpers/services.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { fallbackAdmitted, listOne, uniquePrefix } from './helpers.js';

/** The readiness probe is not an API operation, so it is fetched directly (no contract check). */
async function readyz(server: TestServer): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.baseUrl}/readyz`);
  return { status: res.status, body: await res.json() };
}

// Its own redis-server (to kill and restart), not the run's Redis: needs the binary.
describe.skipIf(withoutRedisServerBinary())('a Redis outage', () => {
  let port: number;
  let redisProcess: ChildProcess | undefined;
  let server: TestServer | undefined;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    port = await freePort();
    redisProcess = await startRedisServer(port);
    // A clock that stands still: every count below falls in one minute, so Remaining is exact.
    server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: prefix }, { clock: manualClock().now });
  });
  afterAll(async () => {
    await server?.close();
    await killRedisServer(redisProcess);
  });

  it('degrades to per-instance counters without stalling requests, and recovers when Redis is back', async () => {
    const s = server!;
    // Connected: shared counters.
    expect(await waitFor(async () => (await readyz(s)).body.checks?.rateLimits === 'shared', 15_000)).toBe(true);
    const { response: first } = await listOne(s);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('999'); // the business key's first request, counted in Redis

    await killRedisServer(redisProcess);

    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      const { response: res, error } = await listOne(s);
      const ms = performance.now() - started;
      expect(res.status, `request ${i + 1}: ${JSON.stringify(error)?.slice(0, 200)}`).toBe(200);
      // A stall would be Redis's own timeouts (seconds each); 3 s leaves room for a machine at load 10.
      expect(ms, `request ${i + 1} took ${ms.toFixed(0)} ms`).toBeLessThan(3000);
      // Counted by this instance alone, from the count Redis last gave it (1).
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(998 - i));
    }
    // Each of the 20 admitted on this instance's own count, and only those (the first was Redis's).
    expect(await fallbackAdmitted(s)).toBe(20);
    const degraded = await readyz(s);
    expect(degraded.status).toBe(200);
    expect(degraded.body.checks.rateLimits).toBe('local-fallback');

    redisProcess = await startRedisServer(port);
    // Readiness alone (no traffic through the limiter) must see that Redis is back.
    const polled: string[] = [];
    const back = await waitFor(async () => {
      const r = await readyz(s);
      polled.push(r.body.checks?.rateLimits);
      return r.status === 200 && r.body.checks?.rateLimits === 'shared';
    }, 20_000);
    expect(back, `/readyz over 20 s reported: ${[...new Set(polled)].join(', ')}`).toBe(true);

    // The new Redis came back empty: the instance wrote its own count (21) into it, so the count goes on from there.
    const { response: after } = await listOne(s);
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-remaining')).toBe('978');
    expect((await readyz(s)).body.checks.rateLimits).toBe('shared');
    const client = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1 });
    try {
      const keys = await client.keys(`${prefix}*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.every((k) => k.startsWith(prefix))).toBe(true);
    } finally {
      client.disconnect();
    }
  }, 60_000);
});

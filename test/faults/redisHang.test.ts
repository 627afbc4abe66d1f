import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { waitFor } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { killRedisServer, startRedisServer } from '../helpers/redisServer.js';
import { withoutRedisServerBinary } from '../helpers/services.js';
import { uniquePrefix } from '../ratelimit/helpers.js';
import { answered } from '../helpers/typedClient.js';

const mode = async (server: TestServer) => ((await (await fetch(`${server.baseUrl}/readyz`)).json()) as { checks?: { rateLimits?: string } }).checks?.rateLimits;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Latencies of `rounds` rounds of 10 concurrent requests. */
async function tenClients(server: TestServer, key: string, rounds: number) {
  const ms: number[] = [];
  const statuses: number[] = [];
  for (let r = 0; r < rounds; r++) {
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        const started = performance.now();
        const res = await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }));
        ms.push(performance.now() - started);
        statuses.push(res.status);
      }),
    );
  }
  return { ms, statuses };
}

describe.skipIf(withoutRedisServerBinary())('a Redis that hangs with its socket open (SIGSTOP)', () => {
  const clock = manualClock();
  const prefix = uniquePrefix();
  let port: number;
  let redis: ChildProcess | undefined;
  let server: TestServer;
  beforeAll(async () => {
    port = await freePort();
    redis = await startRedisServer(port);
    server = await startTestServer({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: prefix }, { clock: clock.now });
    expect(await mode(server)).toBe('shared');
  });
  afterAll(async () => {
    redis?.kill('SIGCONT');
    await server?.close();
    await killRedisServer(redis);
  });

  it('adds at most 0.3 s to the median request, answers no 5xx, and is shared again within seconds of coming back', async () => {
    // Under 1,000 a minute, every request goes to Redis (no batch reservations).
    const key = await server.createKey('enterprise', { perMinute: 900, perDay: 100_000 });
    const before = await tenClients(server, key, 5);

    redis!.kill('SIGSTOP');
    const during = await tenClients(server, key, 10);
    expect(await mode(server)).toBe('local-fallback');
    redis!.kill('SIGCONT');

    console.log(`median ms: ${median(before.ms).toFixed(1)} before, ${median(during.ms).toFixed(1)} while Redis hangs`);
    expect(during.statuses.filter((s) => s >= 500)).toEqual([]);
    expect(during.statuses.every((s) => s === 200)).toBe(true);
    expect(median(during.ms) - median(before.ms)).toBeLessThanOrEqual(300);
    expect(await waitFor(async () => (await mode(server)) === 'shared', 5000)).toBe(true);
  }, 60_000);

  it('counts on from what Redis last said during the hang, and hands its count back to Redis after', async () => {
    clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 5_000); // a fresh minute
    const key = await server.createKey('enterprise', { perMinute: 20, perDay: 1000 });
    for (let i = 0; i < 15; i++) expect((await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }))).status).toBe(200);

    redis!.kill('SIGSTOP');
    const during = [];
    for (let i = 0; i < 10; i++) during.push((await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }))).status);
    // Seeded from Redis's 15: five more, not twenty.
    expect(during).toEqual([200, 200, 200, 200, 200, 429, 429, 429, 429, 429]);
    redis!.kill('SIGCONT');
    expect(await waitFor(async () => (await mode(server)) === 'shared', 5000)).toBe(true);

    // Redis now holds exactly 20: the first request of the hang was answered late and counted by
    // Redis itself, so the hand-back leaves it out (counting it twice would make 21).
    const id = (await server.app.accounts.list()).filter((k) => k.perMinute === 20).at(-1)!.accountId;
    const client = new Redis(`redis://127.0.0.1:${port}`);
    const counted = Number(await client.get(`${prefix}{account:${id}}:m:${Math.floor(clock.now() / 60_000)}`));
    client.disconnect();
    expect(counted).toBe(20);
    const after = await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }));
    expect(after.status).toBe(429);
    expect(after.headers.get('x-ratelimit-remaining')).toBe('0');
  }, 60_000);

  it('keeps its count when Redis comes back empty', async () => {
    clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 5_000);
    const key = await server.createKey('enterprise', { perMinute: 20, perDay: 1000 });
    for (let i = 0; i < 15; i++) expect((await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }))).status).toBe(200);

    await killRedisServer(redis);
    for (let i = 0; i < 5; i++) expect((await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }))).status).toBe(200);
    expect((await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }))).status).toBe(429);
    redis = await startRedisServer(port); // a new, empty Redis on the same port
    expect(await waitFor(async () => (await mode(server)) === 'shared', 5000)).toBe(true);

    // Not 20 more: the flush wrote this instance's 20 into the empty Redis.
    const next = await answered(server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: { authorization: `Bearer ${key}` } }));
    expect(next.status).toBe(429);
  }, 60_000);
});

import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import type { Clock } from '../../src/clock.js';
import { redisUrl, withoutRedis } from '../helpers/services.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer as startServer, type TestServer, type TestServerOptions } from '../helpers/testServer.js';

/** The shared Redis of the test run (TEST_REDIS_URL or 127.0.0.1:6379), as globalSetup probed it. */
export const REDIS_URL = redisUrl();

const prefixes: string[] = [];

/** animal_store_ratelimit_fallback_admitted_total in a scrape of the server's metrics listener. */
export async function fallbackAdmitted(server: TestServer): Promise<number> {
  const text = await (await fetch(server.app.metricsUrl!)).text();
  const line = text.split('\n').find((l) => l.startsWith('animal_store_ratelimit_fallback_admitted_total '));
  return Number(line?.split(' ')[1]);
}

/** A Redis key prefix of its own, since other test files share the same Redis. */
export function uniquePrefix(): string {
  const prefix = `test-${process.pid}-${Math.random().toString(36).slice(2)}:`;
  prefixes.push(prefix);
  return prefix;
}

/** Deletes the keys this test file left in the shared Redis (day counters would otherwise live 2 days). */
export async function cleanupSharedRedis(): Promise<void> {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    for (const prefix of prefixes.splice(0)) {
      const keys = await client.keys(`${prefix}*`);
      if (keys.length > 0) await client.del(...keys);
    }
  } finally {
    client.disconnect();
  }
}

/**
 * The two stores every quota test runs against: the in-process default and Redis. Without
 * a Redis to reach, the Redis store's tests are left out and one skipped entry says so.
 */
export function storeEnvs(): Array<[string, () => Record<string, string>]> {
  const stores: Array<[string, () => Record<string, string>]> = [['in-process store', () => ({})]];
  if (withoutRedis()) it.skip(`with the Redis store: no Redis at ${REDIS_URL} (set TEST_REDIS_URL)`, () => {});
  // A generous Redis deadline: these tests check exact shared counts, not degradation on a loaded machine (test/faults/redisHang does).
  else stores.push(['Redis store', () => ({ REDIS_URL, REDIS_PREFIX: uniquePrefix(), REDIS_TIMEOUT_MS: '2000' })]);
  return stores;
}

/**
 * startTestServer (test/helpers/testServer.ts), and for a server given REDIS_URL the proof that
 * its counters are shared: unable to reach Redis, the store falls back to counters of its own,
 * on which every Redis test would pass just the same.
 */
export async function startTestServer(env: Record<string, string> = {}, opts?: TestServerOptions): Promise<TestServer> {
  const server = await startServer(env, opts);
  try {
    if (env.REDIS_URL) await expectSharedLimits(server.baseUrl);
  } catch (err) {
    await server.close();
    throw err;
  }
  return server;
}

/** Fails unless /readyz reports rate limits shared through Redis within 15 s (the store connects in the background; a generous bound for a loaded machine). */
export async function expectSharedLimits(baseUrl: string): Promise<void> {
  let body: unknown;
  await waitFor(async () => {
    body = await fetch(`${baseUrl}/readyz`).then((res) => res.json(), () => undefined);
    return (body as { checks?: { rateLimits?: string } } | undefined)?.checks?.rateLimits === 'shared';
  }, 15_000);
  expect(body, `${baseUrl}/readyz: rate limits not shared through Redis at ${REDIS_URL}`).toEqual({
    status: 'ready',
    checks: { database: 'ok', rateLimits: 'shared' },
  });
}

/**
 * Unix seconds on a test's clock (see test/helpers/clock.ts): the second the server's rate
 * limiter reads while the clock stands still. Windows are fixed and aligned to UTC.
 */
export const nowSeconds = (clock: Clock) => Math.floor(clock() / 1000);
export const nextMinuteStart = (s: number) => (Math.floor(s / 60) + 1) * 60;
export const nextDayStart = (s: number) => (Math.floor(s / 86_400) + 1) * 86_400;

/** GET /v1/pets?limit=1 through the typed client, with `key` (the server's own key when none is given). */
export const listOne = (server: TestServer, key?: string) =>
  server.api.GET('/pets', { params: { query: { limit: 1 } }, headers: key ? { authorization: `Bearer ${key}` } : {} });

/** Calls `send` `count` times, `concurrency` at a time, and returns every result in order. */
export async function sendMany<R>(count: number, send: () => Promise<R>, concurrency = 20): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const n = Math.min(concurrency, count - i);
    out.push(...(await Promise.all(Array.from({ length: n }, send))));
  }
  return out;
}

/** The statuses of typed-client results. */
export const statuses = (results: Array<{ response: Response }>) => results.map((r) => r.response.status);

/** The rate-limit fields of a response, or null for each that is absent. */
export function rateLimitHeaders(res: { headers: Headers }) {
  const h = res.headers;
  return {
    limit: h.get('x-ratelimit-limit'),
    remaining: h.get('x-ratelimit-remaining'),
    reset: h.get('x-ratelimit-reset'),
    policy: h.get('ratelimit-policy'),
    rateLimit: h.get('ratelimit'),
  };
}

/** Parses `"minute";r=59;t=37, "day";r=999;t=51837`. */
export function parseRateLimit(value: string | null): Record<string, { r: number; t: number }> {
  const out: Record<string, { r: number; t: number }> = {};
  for (const part of (value ?? '').split(',')) {
    const m = /^\s*"(\w+)";r=(\d+);t=(\d+)\s*$/.exec(part);
    if (m) out[m[1]!] = { r: Number(m[2]), t: Number(m[3]) };
  }
  return out;
}

/**
 * Two instances on one database sharing one Redis with its own prefix (a timeout long enough for
 * exact shared counts, not degradation), on one clock as NTP gives them; started before the
 * describe's tests and closed after. Call inside a describe.
 */
export function twoInstancesSharingRedis(clock: Clock): { a(): TestServer; b(): TestServer } {
  let db: TestDatabase;
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    const env = { REDIS_URL, REDIS_PREFIX: uniquePrefix(), REDIS_TIMEOUT_MS: '2000' };
    a = await startTestServer(env, { db, clock });
    b = await startTestServer(env, { db, clock });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });
  return { a: () => a!, b: () => b! };
}

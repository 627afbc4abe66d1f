import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redisCluster.js';
import { loadConfig } from '../../src/config.js';
import { parseRedisUrl } from '../../src/configParts/redisUrl.js';
import { manualClock } from '../helpers/clock.js';
import { withoutRedisCluster } from '../helpers/services.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { listOne, sendMany } from './helpers.js';

describe('REDIS_URL naming a Redis Cluster', () => {
  it('takes seed nodes, an optional user and password, and TLS', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({ kind: 'node', url: 'redis://127.0.0.1:6379' });
    expect(parseRedisUrl('rediss+cluster://app:p%40ss@10.0.0.1:7000,[::1]:7001,redis-2')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 7001 },
        { host: 'redis-2', port: 6379 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    expect(parseRedisUrl('redis+cluster://:secret@a:1')).toMatchObject({ username: undefined, password: 'secret', tls: false });
    expect(loadConfig({ REDIS_URL: 'redis+cluster://a:1,b:2' }).redisUrl).toBe('redis+cluster://a:1,b:2');
  });

  it.each([
    ['redis+cluster://', /REDIS_URL must be/],
    ['redis+cluster://a:1,,b:2', /REDIS_URL: "" is not host:port/],
    ['redis+cluster://a:70000', /REDIS_URL: "a:70000" is not host:port/],
    ['redis+cluster://a:1/0', /REDIS_URL must be/], // a cluster has no database numbers
    ['cluster://a:1', /REDIS_URL/],
  ])('refuses %s at start', (url, message) => {
    expect(() => loadConfig({ REDIS_URL: url })).toThrow(message);
  });
});

const PREFIX = 'test:'; // a cluster of this file's own: no other test shares its keys

async function readyz(server: TestServer): Promise<unknown> {
  return (await fetch(`${server.baseUrl}/readyz`)).json();
}

describe.skipIf(withoutRedisCluster())('two instances sharing a 3-master Redis Cluster', () => {
  // One clock for both instances, standing still: no minute ends mid-test.
  const clock = manualClock();
  let cluster: RedisCluster;
  let db: TestDatabase;
  let a: TestServer | undefined;
  let b: TestServer | undefined;

  beforeAll(async () => {
    const started = performance.now();
    cluster = await startRedisCluster();
    const startMs = performance.now() - started;
    db = await createTestDatabase();
    // Exact shared counts, not degradation (test/faults/redisCluster does that); X-Forwarded-For names anonymous subjects.
    const env = { REDIS_URL: cluster.url, REDIS_PREFIX: PREFIX, REDIS_TIMEOUT_MS: '2000', TRUST_PROXY: 'true' };
    a = await startTestServer(env, { db, clock: clock.now });
    b = await startTestServer(env, { db, clock: clock.now });
    console.log(`redis-cluster: 3 masters started in ${(startMs / 1000).toFixed(1)} s at ${cluster.url}`);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    await cluster?.stop();
  });

  /** Every key under PREFIX, by the port of the master that holds it (KEYS on a cluster node lists its own). */
  async function keysByMaster(): Promise<Map<number, string[]>> {
    const out = new Map<number, string[]>();
    for (const node of cluster.nodes) {
      const client = node.connect();
      try {
        out.set(node.port, (await client.keys(`${PREFIX}*`)).sort());
      } finally {
        client.disconnect();
      }
    }
    return out;
  }

  it('reports its limits shared on /readyz once every master answers', async () => {
    for (const server of [a!, b!]) {
      let body: unknown;
      await waitFor(async () => ((body = await readyz(server)) as { checks?: { rateLimits?: string } }).checks?.rateLimits === 'shared', 10_000);
      expect(body).toEqual({ status: 'ready', checks: { database: 'ok', rateLimits: 'shared' } });
    }
  });

  it('admit exactly one quota between them: 120 concurrent requests of a free key give 60 × 200 and 60 × 429', async () => {
    const key = await a!.createKey('free');
    const id = (await a!.app.accounts.list()).filter((k) => k.plan === 'free').at(-1)!.accountId;
    let sent = 0;
    const responses = await sendMany(120, () => listOne(sent++ % 2 === 0 ? a! : b!, key), 120); // all at once
    const count = (status: number) => responses.filter((r) => r.response.status === status).length;
    expect({ 200: count(200), 429: count(429) }).toEqual({ 200: 60, 429: 60 });
    expect(responses.filter((r) => r.response.status === 429).map((r) => r.error?.code)).toEqual(Array(60).fill('rate_limited'));

    // Every key of the subject (minute, day, first refusal) sits on the one master that owns its tag's slot.
    const minute = Math.floor(clock.now() / 60_000);
    const day = Math.floor(clock.now() / 86_400_000);
    const tag = `${PREFIX}{account:${id}}`;
    const slot = await cluster.keySlot(`${tag}:m:${minute}`);
    const master = await cluster.masterOf(slot);
    const held = await keysByMaster();
    const mine = (keys: string[]) => keys.filter((k) => k.startsWith(tag));
    expect(mine(held.get(master.port)!)).toEqual([`${tag}:d:${day}`, `${tag}:f:${minute}`, `${tag}:m:${minute}`]);
    for (const [port, keys] of held) if (port !== master.port) expect(mine(keys)).toEqual([]);
    console.log(
      `redis-cluster: admitted ${count(200)} of 120 requests of a 60/min key across 2 instances (${count(429)} × 429); ` +
        `its keys in slot ${slot} on master :${master.port}`,
    );
  });

  it('spreads subjects over the masters by their hash tags, each counted across both instances', async () => {
    // One anonymous client address per master, chosen by the slot the cluster computes for its tag.
    const minute = Math.floor(clock.now() / 60_000);
    const chosen = new Map<number, { ip: string; slot: number }>();
    for (let i = 1; chosen.size < cluster.nodes.length && i <= 200; i++) {
      const ip = `198.51.100.${i}`;
      const slot = await cluster.keySlot(`${PREFIX}{ip:${ip}}:m:${minute}`);
      const master = await cluster.masterOf(slot);
      if (!chosen.has(master.port)) chosen.set(master.port, { ip, slot });
    }
    expect(chosen.size).toBe(3);

    for (const { ip } of chosen.values()) {
      const remaining: Array<string | null> = [];
      for (let i = 0; i < 4; i++) {
        const { response } = await (i % 2 === 0 ? a! : b!).api.GET('/pets', { headers: { authorization: null, 'x-forwarded-for': ip } });
        expect(response.status).toBe(401);
        remaining.push(response.headers.get('x-ratelimit-remaining'));
      }
      expect(remaining).toEqual(['59', '58', '57', '56']); // one count, whichever instance answered
    }
    const held = await keysByMaster();
    for (const [port, { ip }] of chosen) {
      expect(held.get(port)!.filter((k) => k.includes('{ip:'))).toEqual([
        `${PREFIX}{ip:${ip}}:d:${Math.floor(clock.now() / 86_400_000)}`,
        `${PREFIX}{ip:${ip}}:m:${minute}`,
      ]);
    }
    const where = [...chosen].map(([port, { slot }]) => `slot ${slot} on :${port}`).join(', ');
    console.log(`redis-cluster: 3 anonymous subjects on 3 masters (${where}), 4 requests each across 2 instances, counted 4 each`);
  });
});

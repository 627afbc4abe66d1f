import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { waitFor } from '../helpers/poll.js';
import { freePort } from '../helpers/ports.js';
import { stop } from '../helpers/processes.js';
import { killRedisServer, startRedisServer } from '../helpers/redisServer.js';
import { withoutRedisServerBinary } from '../helpers/services.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import {
  addEndpoint, allDeliveries, countingReceiver, createPet, tally, waitForDistinct, waitForSettledQueue, startWebhookServer, type DeliveryRow,
} from '../helpers/webhookFaults.js';
import { uniquePrefix } from '../ratelimit/helpers.js';

/**
 * Webhook deliveries through outages, on server processes: the receiver down for a while, the
 * service killed with retries pending, the database down, Redis down. Nothing committed is lost,
 * nothing is delivered twice, and nothing is delivered for a create that was refused.
 */
let db: ServerDatabase;
let sql: pg.Pool;
beforeAll(async () => {
  db = await createServerDatabase('webhooks_outages');
  sql = new pg.Pool({ connectionString: db.env.DATABASE_URL, max: 2 });
  sql.on('error', () => {}); // its idle connections are ended when the database is taken down
});
afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

const start = (env: Record<string, string>) => startWebhookServer(db.env, env);
const newKey = () => unlimitedKey(db.env);

async function createPets(baseUrl: string, key: string, count: number, label: string): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await createPet(baseUrl, key, `${label} ${i}`);
    expect(res.status).toBe(201);
    ids.push(res.id!);
  }
  return ids;
}

const attempts = async (endpointId: number, attempt: number) =>
  (await sql.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempt = $2', [endpointId, attempt])).rows[0].n as number;

/** The delivery log of one endpoint, grouped by event, oldest attempt first. */
function byEvent(log: DeliveryRow[]): DeliveryRow[][] {
  const groups = new Map<string, DeliveryRow[]>();
  for (const row of log) groups.set(row.eventId, [...(groups.get(row.eventId) ?? []), row]);
  return [...groups.values()].map((rows) => rows.sort((a, b) => a.attempt - b.attempt));
}

describe('webhooks through outages', () => {
  it('receiver down for a while: every event is delivered once it is back, after failed attempts spaced by WEBHOOK_RETRY_DELAYS_SECONDS', async () => {
    const server = await start({ WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1,1,1' });
    onTestFinished(async () => void (await server.stop()));
    const key = await newKey();
    const port = await freePort(); // nothing listens there yet: connections are refused
    const endpointId = await addEndpoint(server.baseUrl, key, `http://127.0.0.1:${port}/hook`);
    const ids = await createPets(server.baseUrl, key, 10, 'receiver down');

    // Down until every event has failed twice.
    expect(await waitFor(async () => (await attempts(endpointId, 2)) === 10, 60_000, 100)).toBe(true);
    const receiver = await countingReceiver(port);
    onTestFinished(() => receiver.close());
    expect(await waitForDistinct(receiver, 10)).toBe(true);
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true); // nothing left to send: a duplicate would have come

    expect(tally(receiver, ids)).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    const events = byEvent(await allDeliveries(server.baseUrl, key, endpointId));
    expect(events).toHaveLength(10);
    for (const rows of events) {
      const last = rows.at(-1)!;
      // Attempts 1, 2, … k: the failures refused, the last delivered, and nothing after it.
      expect(rows.map((r) => r.attempt)).toEqual(Array.from({ length: rows.length }, (_, i) => i + 1));
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(rows.length).toBeLessThanOrEqual(7);
      for (const failed of rows.slice(0, -1)) expect([failed.responseStatus, failed.error]).toEqual([null, expect.stringMatching(/^ECONNREFUSED/)]);
      expect([last.responseStatus, last.error]).toEqual([204, null]);
      // Each retry waited its delay (1 s, ±20% jitter) after the attempt before it was recorded.
      for (let i = 1; i < rows.length; i++) {
        const gap = Date.parse(rows[i]!.createdAt) - Date.parse(rows[i - 1]!.createdAt);
        expect(gap).toBeGreaterThanOrEqual(790);
        expect(gap).toBeLessThan(15_000);
      }
    }
  }, 180_000);

  it('kill -9 with retries pending: after a restart, with the receiver back, each event is delivered once, as attempt 2', async () => {
    const env = { WEBHOOK_RETRY_DELAYS_SECONDS: '6,1,1,1' };
    const first = await start(env);
    onTestFinished(async () => void (await first.stop()));
    const key = await newKey();
    const port = await freePort();
    const endpointId = await addEndpoint(first.baseUrl, key, `http://127.0.0.1:${port}/hook`);
    const ids = await createPets(first.baseUrl, key, 10, 'before kill');
    expect(await waitFor(async () => (await attempts(endpointId, 1)) === 10, 60_000, 100)).toBe(true);

    // Each retry is queued (committed with its failed attempt) for about 6 s later; none is running once the
    // first attempts' jobs are completed (a batch of pg-boss completes that may land just after the attempts' rows).
    const queued = async () =>
      (await sql.query(
        `SELECT count(*) FILTER (WHERE state = 'created' AND start_after > now())::int AS pending, count(*) FILTER (WHERE state = 'active')::int AS active
           FROM pgboss.job WHERE name = 'webhook-delivery' AND (data->>'endpointId')::int = $1`,
        [endpointId],
      )).rows[0] as { pending: number; active: number };
    expect(await waitFor(async () => (await queued()).active === 0, 3_000, 20)).toBe(true);
    expect(await queued()).toEqual({ pending: 10, active: 0 });
    expect(await stop(first.child, { signal: 'SIGKILL' })).toBeNull();
    expect(first.child.signalCode).toBe('SIGKILL');

    const receiver = await countingReceiver(port);
    onTestFinished(() => receiver.close());
    const second = await start(env);
    onTestFinished(async () => void (await second.stop()));
    expect(await waitForDistinct(receiver, 10)).toBe(true);
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true);

    expect(tally(receiver, ids)).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    const events = byEvent(await allDeliveries(second.baseUrl, key, endpointId));
    expect(events.map((rows) => rows.map((r) => [r.attempt, r.responseStatus]))).toEqual(Array(10).fill([[1, null], [2, 204]]));
  }, 180_000);

  it('database down: creates answer 503 and nothing is delivered for them; events committed before are delivered once it is back', async () => {
    const server = await start({ WEBHOOK_RETRY_DELAYS_SECONDS: '8,1,1,1,1,1' });
    onTestFinished(async () => void (await server.stop()));
    const key = await newKey();
    const port = await freePort();
    const endpointId = await addEndpoint(server.baseUrl, key, `http://127.0.0.1:${port}/hook`);
    const before = await createPets(server.baseUrl, key, 5, 'before outage');
    expect(await waitFor(async () => (await attempts(endpointId, 1)) === 5, 60_000, 100)).toBe(true);

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    const during: number[] = [];
    try {
      await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db.name]);
      for (let i = 0; i < 5; i++) during.push((await createPet(server.baseUrl, key, `during outage ${i}`)).status);
    } finally {
      await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    }
    expect(during).toEqual([503, 503, 503, 503, 503]);

    const receiver = await countingReceiver(port);
    onTestFinished(() => receiver.close());
    const after = await createPets(server.baseUrl, key, 1, 'after outage');
    expect(await waitForDistinct(receiver, 6)).toBe(true);
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true);

    expect(tally(receiver, [...before, ...after])).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    expect(receiver.receipts).toHaveLength(6);
    const refused = await sql.query(`SELECT (SELECT count(*)::int FROM pets WHERE name LIKE 'during outage%') AS pets, (SELECT count(*)::int FROM events WHERE object->>'name' LIKE 'during outage%') AS events`);
    expect(refused.rows[0]).toEqual({ pets: 0, events: 0 });
  }, 180_000);

  describe.skipIf(withoutRedisServerBinary())('Redis down', () => {
    let redis: ChildProcess | undefined;
    afterAll(() => killRedisServer(redis));

    it('changes nothing for delivery: creates while Redis is killed are each delivered once', async () => {
      const redisPort = await freePort();
      redis = await startRedisServer(redisPort);
      const server = await start({ REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: uniquePrefix() });
      onTestFinished(async () => void (await server.stop()));
      const mode = async () => ((await (await fetch(`${server.baseUrl}/readyz`)).json()) as { checks?: { rateLimits?: string } }).checks?.rateLimits;
      expect(await mode()).toBe('shared');
      const key = await newKey();
      const receiver = await countingReceiver();
      onTestFinished(() => receiver.close());
      const endpointId = await addEndpoint(server.baseUrl, key, receiver.url);
      const up = await createPets(server.baseUrl, key, 5, 'redis up');

      await killRedisServer(redis);
      const down = await createPets(server.baseUrl, key, 5, 'redis down');
      expect(await mode()).toBe('local-fallback');
      expect(await waitForDistinct(receiver, 10)).toBe(true);
      expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true);
      expect(tally(receiver, [...up, ...down])).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
      expect(receiver.receipts).toHaveLength(10);
    }, 120_000);
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DEAD_LETTER_QUEUE, DELIVERY_QUEUE } from '../../src/webhooks/queue.js';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { pacedReceiver } from '../helpers/hostileReceivers.js';
import { waitFor } from '../helpers/poll.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { addEndpoint, countingReceiver, createPet, percentile, startWebhookServer, victimRun, waitForSettledQueue } from '../helpers/webhookFaults.js';

/**
 * Delivery across a fleet of two instances on one database: the fairness of one instance holds with
 * two, an endpoint's bound of requests in flight (WEBHOOK_ENDPOINT_CONCURRENCY, 8 here) holds across both,
 * and rolling restarts hand claimed deliveries back without losing, doubling or retrying any.
 */
let db: ServerDatabase;
let sql: pg.Pool;
beforeAll(async () => {
  db = await createServerDatabase('webhooks_fleet');
  sql = new pg.Pool({ connectionString: db.env.DATABASE_URL, max: 2 });
});
afterAll(async () => {
  await sql?.end();
  await db?.drop();
});

const start = (extra: Record<string, string> = {}) => startWebhookServer(db.env, { WEBHOOK_TIMEOUT_SECONDS: '2', WEBHOOK_POLL_SECONDS: '0.1', ...extra });
/** A bound each instance alone could reach twice over with two instances (16 of its 64 workers for one endpoint). */
const bound = { WEBHOOK_ENDPOINT_CONCURRENCY: '8' };
const newKey = () => unlimitedKey(db.env);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A receiver that answers 204 after `delayMs` and notes each (webhook-id, endpoint) it hears. */
async function slowLedger(delayMs: number) {
  const heard: string[] = [];
  const server = http.createServer((req, res) => {
    const endpoint = new URL(req.url ?? '/', 'http://x').searchParams.get('endpoint');
    heard.push(`${String(req.headers['webhook-id'])} ${endpoint}`);
    req.resume();
    setTimeout(() => res.writeHead(204).end(), delayMs).unref();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    heard,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe('delivery across two instances', () => {
  it("beside 3 hostile accounts × 16 endpoints (204 after 1.8 s), the victim's 30 deliveries arrive with p90 within 2 s, and no endpoint has more than 8 in flight across both instances", async () => {
    const [a, b] = await Promise.all([start(bound), start(bound)]);
    const victim = await countingReceiver();
    const hostile = await pacedReceiver('slow204', 1800);
    // Answers well within the slow mark (a tenth of the timeout), so the endpoint keeps its whole bound of 8.
    const busy = await pacedReceiver('slow204', 100);
    onTestFinished(async () => {
      await Promise.all([victim.close(), hostile.close(), busy.close()]);
      await Promise.all([a.stop(), b.stop()]);
    });
    const victimKey = await newKey();
    await addEndpoint(a.baseUrl, victimKey, victim.url);

    const control = await victimRun([b.baseUrl, a.baseUrl], victimKey, victim, 'control');

    const keys = await Promise.all([newKey(), newKey(), newKey()]);
    await Promise.all(keys.map(async (key, k) => {
      for (let e = 0; e < 16; e++) await addEndpoint(b.baseUrl, key, `${hostile.url}?endpoint=${k}-${e}`);
      for (let i = 0; i < 5; i++) expect((await createPet(b.baseUrl, key, `hostile ${i}`)).status).toBe(201);
    }));
    const busyKey = await newKey();
    const busyEndpoint = await addEndpoint(a.baseUrl, busyKey, `${busy.url}?endpoint=busy`);
    await Promise.all(Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; i < 10; i++) expect((await createPet(w % 2 ? a.baseUrl : b.baseUrl, busyKey, `busy ${w}-${i}`)).status).toBe(201);
    }));
    expect(await waitFor(() => hostile.requests >= 48, 10_000, 20)).toBe(true);
    const latencies = await victimRun([b.baseUrl, a.baseUrl], victimKey, victim, 'victim');
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [busyEndpoint], 60_000)).toBe(true);

    const line = `two instances: control p50 ${percentile(control, 50)} ms, p90 ${percentile(control, 90)} ms; victim p50 ${percentile(latencies, 50)} ms, p90 ${percentile(latencies, 90)} ms; ` +
      `busy endpoint: ${busy.requests} requests, at most ${busy.peakPerEndpoint.get('busy')} in flight; hostile endpoints at most ${Math.max(...hostile.peakPerEndpoint.values())} each`;
    console.log(line);
    expect(percentile(latencies, 90), line).toBeLessThanOrEqual(2000);
    expect(busy.requests).toBe(60);
    expect(busy.peakPerEndpoint.get('busy'), line).toBeLessThanOrEqual(8);
    for (const [endpoint, peak] of hostile.peakPerEndpoint) expect(peak, endpoint).toBeLessThanOrEqual(8);
  }, 180_000);

  it('six rolling restarts (SIGTERM, then start) of one of two instances during 2,000 deliveries: none lost, none sent twice, no retry counted', async () => {
    const receiver = await slowLedger(500);
    const env = { ...bound, WEBHOOK_TIMEOUT_SECONDS: '10' };
    const a = await start(env);
    let b = await start(env);
    onTestFinished(async () => {
      await receiver.close();
      await Promise.all([a.stop(), b.stop()]);
    });
    const key = await newKey();
    const endpoints: number[] = [];
    for (let e = 0; e < 4; e++) endpoints.push(await addEndpoint(a.baseUrl, key, `${receiver.url}?endpoint=${e}`));
    // 500 events to 4 endpoints: 2,000 deliveries, 500 ms each, at most 8 per endpoint in flight: about 30 s of work,
    // longer than the six restarts take.
    const pets: number[] = [];
    await Promise.all(Array.from({ length: 10 }, async (_, w) => {
      for (let i = 0; i < 50; i++) {
        const res = await createPet(a.baseUrl, key, `rolling ${w}-${i}`);
        expect(res.status).toBe(201);
        pets.push(res.id!);
      }
    }));
    let restarts = 0;
    while (restarts < 6) {
      await sleep(500);
      expect(await b.stop()).toBe(0);
      b = await start(env);
      restarts++;
    }
    const heardDuringRestarts = receiver.heard.length;
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, endpoints, 120_000)).toBe(true);

    const distinct = new Set(receiver.heard);
    const { rows: [jobs] } = await sql.query<{ retried: number; failed: number; dead: number; completed: number }>(
      `SELECT count(*) FILTER (WHERE name = $1 AND retry_count > 0)::int AS retried, count(*) FILTER (WHERE name = $1 AND state = 'failed')::int AS failed,
              count(*) FILTER (WHERE name = $2)::int AS dead, count(*) FILTER (WHERE name = $1 AND state = 'completed')::int AS completed
         FROM pgboss.job WHERE name IN ($1, $2) AND (data->>'accountId')::bigint = (SELECT account_id FROM webhook_endpoints WHERE id = $3)`,
      [DELIVERY_QUEUE, DEAD_LETTER_QUEUE, endpoints[0]],
    );
    console.log(`rolling restarts: ${restarts}, ${heardDuringRestarts} of 2000 heard while they ran; ${receiver.heard.length} requests, ${distinct.size} distinct; jobs ${JSON.stringify(jobs)}`);
    expect(heardDuringRestarts).toBeLessThan(2000);
    expect({ requests: receiver.heard.length, distinct: distinct.size }).toEqual({ requests: 2000, distinct: 2000 });
    expect(jobs).toEqual({ retried: 0, failed: 0, dead: 0, completed: 2000 });
  }, 240_000);
});

describe('settling deliveries together', () => {
  it('an endpoint deleted while deliveries to 15 others settle with it: each other receiver gets exactly one POST, the deleted one no retry', async () => {
    const server = await start();
    // Holds every request until all 16 have come, then answers one, and the other 15 at once: theirs come while
    // the first one's settle is in flight, so they settle together, the deleted endpoint's among them.
    const heard: string[] = [];
    const held = new Map<string, http.ServerResponse>();
    const receiver = http.createServer((req, res) => {
      const endpoint = new URL(req.url ?? '/', 'http://x').searchParams.get('endpoint')!;
      heard.push(endpoint);
      req.resume();
      if (held.has(endpoint)) res.writeHead(204).end();
      else held.set(endpoint, res);
    });
    const answerAll = () => {
      const order = ['0', 'deleted', ...[...held.keys()].filter((e) => e !== '0' && e !== 'deleted')];
      for (const endpoint of order) held.get(endpoint)!.writeHead(204).end();
    };
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    onTestFinished(async () => {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
      await server.stop();
    });
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const owner = await newKey();
    const others = await newKey();
    const deleted = await addEndpoint(server.baseUrl, owner, `${url}?endpoint=deleted`);
    const kept: number[] = [];
    for (let e = 0; e < 15; e++) kept.push(await addEndpoint(server.baseUrl, others, `${url}?endpoint=${e}`));
    // One event for each account: the owner's to its one endpoint, the other's to its 15.
    expect((await createPet(server.baseUrl, owner, 'deleted meanwhile')).status).toBe(201);
    expect((await createPet(server.baseUrl, others, 'kept')).status).toBe(201);
    expect(await waitFor(() => heard.length === 16, 10_000, 10)).toBe(true);
    expect((await fetch(`${server.baseUrl}/v1/webhook-endpoints/${deleted}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner}` } })).status).toBe(204);
    answerAll();

    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [deleted, ...kept], 60_000)).toBe(true);
    const counts = new Map<string, number>();
    for (const endpoint of heard) counts.set(endpoint, (counts.get(endpoint) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual(Object.fromEntries([['deleted', 1], ...kept.map((_, e) => [String(e), 1])]));
    const recorded = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = ANY($1::bigint[]) AND response_status = 204', [kept]);
    expect(recorded.rows[0]!.n).toBe(15);
  }, 120_000);
});


import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { secretBox, newWebhookSecret } from '../../src/webhooks/secrets.js';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { hugeBodyReceiver, redirectingReceiver, silentReceiver, tricklingReceiver } from '../helpers/hostileReceivers.js';
import { waitFor } from '../helpers/poll.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import {
  addEndpoint, allDeliveries, call, countingReceiver, createPet, FAULT_WEBHOOK_ENV, percentile, tally, waitForDistinct, waitForSettledQueue, startWebhookServer, type DeliveryRow,
} from '../helpers/webhookFaults.js';

/**
 * Hostile receivers, on a server process with WEBHOOK_TIMEOUT_SECONDS=2: one that never answers,
 * one that trickles its answer's head, one that answers a 50 MB body, one that redirects to
 * 127.0.0.1. Every attempt is bounded by the timeout, none is followed anywhere, and a healthy
 * endpoint of the same account hears of every event promptly meanwhile.
 */
const TIMEOUT_MS = 3000;
let db: ServerDatabase;
beforeAll(async () => {
  db = await createServerDatabase('webhooks_hostile');
});
afterAll(() => db?.drop());

// The breaker off in effect (100 timeouts in a row): every scheduled attempt is made, each bounded on its own
// (the breaker pausing endpoints that keep timing out is webhooksFairness.test.ts's).
// 32 workers, 16 in flight per endpoint at most (half); an endpoint whose attempts time out or fail falls to one at a time (webhooks/endpointLimits.ts).
const env = { ...FAULT_WEBHOOK_ENV, WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_MS / 1000), WEBHOOK_RETRY_DELAYS_SECONDS: '1,1', WEBHOOK_BREAKER_TIMEOUTS: '100', WEBHOOK_CONCURRENCY: '32' };
const start = (extra: Record<string, string> = {}) => startWebhookServer(db.env, { ...env, ...extra });
const newKey = () => unlimitedKey(db.env);

describe('hostile webhook receivers', () => {
  it('each attempt is bounded by the timeout, nothing follows the redirect, and the healthy endpoint hears every event promptly', async () => {
    const server = await start();
    const [silent, trickling, huge, target, healthy] = await Promise.all([silentReceiver(), tricklingReceiver(), hugeBodyReceiver(), countingReceiver(), countingReceiver()]);
    const redirecting = await redirectingReceiver(target.url);
    // Receivers last: what hangs on them ends at once, so the server stops without waiting it out.
    onTestFinished(async () => {
      await Promise.all([silent, trickling, huge, target, healthy, redirecting].map((r) => r.close()));
      await server.stop();
    });
    const key = await newKey();
    const ids = {
      silent: await addEndpoint(server.baseUrl, key, silent.url),
      trickling: await addEndpoint(server.baseUrl, key, trickling.url),
      huge: await addEndpoint(server.baseUrl, key, huge.url),
      redirecting: await addEndpoint(server.baseUrl, key, redirecting.url),
      healthy: await addEndpoint(server.baseUrl, key, healthy.url),
    };

    // Four events: each hanging endpoint holds four workers, then one (its limit halves with each failure),
    // through every round of attempts, while the healthy one is served.
    const EVENTS = 4;
    const created: Array<{ id: number; answeredAt: number }> = [];
    for (let i = 0; i < EVENTS; i++) {
      const res = await createPet(server.baseUrl, key, `hostile ${i}`);
      expect(res.status).toBe(201);
      created.push({ id: res.id!, answeredAt: res.answeredAt });
    }
    expect(await waitForDistinct(healthy, EVENTS)).toBe(true);
    const answeredAt = new Map(created.map((c) => [c.id, c.answeredAt]));
    const healthyMs = healthy.receipts.map((r) => r.at - answeredAt.get(r.objectId)!);

    // Three attempts (WEBHOOK_RETRY_DELAYS_SECONDS=1,1) of every event to each failing endpoint; one to the huge one, which answers 200.
    const logs: Record<string, DeliveryRow[]> = {};
    const readLogs = async () => {
      for (const [name, id] of Object.entries(ids)) logs[name] = await allDeliveries(server.baseUrl, key, id);
    };
    const settled = await waitFor(async () => {
      await readLogs();
      return logs.silent!.length === 3 * EVENTS && logs.trickling!.length === 3 * EVENTS && logs.redirecting!.length === 3 * EVENTS && logs.huge!.length === EVENTS;
    }, 120_000, 200);
    expect(settled).toBe(true);
    // Nothing left in the queue: the logs read now are final, anything more included.
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, Object.values(ids))).toBe(true);
    await readLogs();
    expect([logs.silent!.length, logs.trickling!.length, logs.redirecting!.length, logs.huge!.length, logs.healthy!.length]).toEqual([3 * EVENTS, 3 * EVENTS, 3 * EVENTS, EVENTS, EVENTS]);

    const summary = (rows: DeliveryRow[]) => [...new Set(rows.map((r) => `${r.attempt}:${r.responseStatus}:${r.error}`))].sort();
    const timedOut = `timeout after ${TIMEOUT_MS} ms`;
    expect(summary(logs.silent!)).toEqual([`1:null:${timedOut}`, `2:null:${timedOut}`, `3:null:${timedOut}`]);
    expect(summary(logs.trickling!)).toEqual([`1:null:${timedOut}`, `2:null:${timedOut}`, `3:null:${timedOut}`]);
    expect(summary(logs.redirecting!)).toEqual(['1:302:status 302', '2:302:status 302', '3:302:status 302']);
    expect(summary(logs.huge!)).toEqual(['1:200:null']);
    expect(summary(logs.healthy!)).toEqual(['1:204:null']);
    // Bounded: the timeout (plus scheduling slack on a loaded machine), whatever the receiver does.
    const longest = (rows: DeliveryRow[]) => Math.max(...rows.map((r) => r.durationMs));
    const shortest = (rows: DeliveryRow[]) => Math.min(...rows.map((r) => r.durationMs));
    for (const name of ['silent', 'trickling'] as const) {
      expect(shortest(logs[name]!)).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      expect(longest(logs[name]!)).toBeLessThan(TIMEOUT_MS + 1500);
    }
    expect(longest(logs.huge!)).toBeLessThan(TIMEOUT_MS + 1500);
    expect(longest(logs.redirecting!)).toBeLessThan(TIMEOUT_MS + 1500);

    // Each receiver heard exactly the attempts listed; the 50 MB answers were all cut short; the redirect's target heard nothing.
    expect([silent.requests, trickling.requests, redirecting.requests, huge.requests]).toEqual([3 * EVENTS, 3 * EVENTS, 3 * EVENTS, EVENTS]);
    expect(await waitFor(() => huge.cutShort === EVENTS, 10_000)).toBe(true);
    expect(huge.finished).toBe(0);
    expect(target.receipts).toHaveLength(0);
    expect(tally(healthy, created.map((c) => c.id))).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    expect(healthy.receipts).toHaveLength(EVENTS);

    console.log(
      `hostile: healthy endpoint 201-to-receipt p50 ${percentile(healthyMs, 50)} ms, max ${Math.max(...healthyMs)} ms; ` +
        `attempt ms silent ${shortest(logs.silent!)}–${longest(logs.silent!)}, trickling ${shortest(logs.trickling!)}–${longest(logs.trickling!)}, ` +
        `huge ${shortest(logs.huge!)}–${longest(logs.huge!)}, redirecting ${shortest(logs.redirecting!)}–${longest(logs.redirecting!)}`,
    );
    // Not held behind the hostile ones' timeouts: each healthy delivery well within one timeout of its 201.
    expect(Math.max(...healthyMs)).toBeLessThan(TIMEOUT_MS);
  }, 240_000);

  it('with private targets disallowed, a delivery to a loopback address reaches nothing, by name or literal', async () => {
    const server = await start({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    const target = await countingReceiver();
    const redirecting = await redirectingReceiver(target.url);
    onTestFinished(async () => {
      await Promise.all([target, redirecting].map((r) => r.close()));
      await server.stop();
    });
    const key = await newKey();
    // Refused when set…
    const refused = await call(server.baseUrl, key, '/v1/webhook-endpoints', { body: { url: redirecting.url, eventTypes: ['*'] } });
    expect([refused.status, refused.body.code]).toEqual([400, 'webhook_url_not_allowed']);
    // …so these are written as a name that resolved elsewhere when it was set would stand (DNS rebinding), and a literal.
    const account = (await call(server.baseUrl, key, '/v1/account')).body.id as number;
    const sealed = secretBox(env.WEBHOOK_SECRET_KEY).seal(newWebhookSecret());
    const sql = new pg.Client({ connectionString: db.env.DATABASE_URL });
    await sql.connect();
    onTestFinished(() => sql.end());
    const insert = async (url: string) =>
      Number((await sql.query(`INSERT INTO webhook_endpoints (account_id, url, event_types, secret) VALUES ($1, $2, '{*}', $3) RETURNING id`, [account, url, sealed])).rows[0].id);
    const byName = await insert(`http://localhost:${redirecting.port}/hook`);
    const literal = await insert(redirecting.url);

    for (let i = 0; i < 2; i++) expect((await createPet(server.baseUrl, key, `private ${i}`)).status).toBe(201);
    const logs: Record<string, DeliveryRow[]> = {};
    expect(await waitFor(async () => {
      logs.byName = await allDeliveries(server.baseUrl, key, byName);
      logs.literal = await allDeliveries(server.baseUrl, key, literal);
      return logs.byName.length === 6 && logs.literal.length === 6;
    }, 60_000, 500)).toBe(true);
    // Each names what lifts the rule in development, as the refusal at creation does.
    const hint = ' (not a public address; for a receiver on your own machine in development, see docs/WEBHOOKS.md#local-development: WEBHOOK_ALLOW_PRIVATE_TARGETS=true)';
    expect(new Set(logs.byName!.map((r) => `${r.responseStatus}:${r.error}`))).toEqual(new Set([expect.stringMatching(/^null:address not allowed: localhost resolves to (127\.0\.0\.1|::1)(, (127\.0\.0\.1|::1))? \(not a public address; .*WEBHOOK_ALLOW_PRIVATE_TARGETS=true\)$/)]));
    expect(new Set(logs.literal!.map((r) => `${r.responseStatus}:${r.error}`))).toEqual(new Set([`null:address not allowed: 127.0.0.1${hint}`]));
    expect([redirecting.requests, target.receipts.length]).toEqual([0, 0]);
  }, 120_000);
});

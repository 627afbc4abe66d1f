import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { silentReceiver } from '../helpers/hostileReceivers.js';
import { waitFor } from '../helpers/poll.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import {
  addEndpoint, allDeliveries, call, countingReceiver, createPet, percentile, tally, waitForDistinct, waitForSettledQueue, startWebhookServer, type DeliveryRow,
} from '../helpers/webhookFaults.js';

/**
 * Many accounts, one instance's delivery workers (WEBHOOK_CONCURRENCY 64: 32 per account, 8 per
 * endpoint by default): an account whose 16 endpoints never answer holds at most its share while
 * another account's deliveries arrive promptly, its endpoints' circuit breakers pause them, and
 * redeliverEvent cannot multiply one event.
 */
const TIMEOUT_MS = 2000;
let db: ServerDatabase;
beforeAll(async () => {
  db = await createServerDatabase('webhooks_fairness');
});
afterAll(() => db?.drop());

const start = (extra: Record<string, string> = {}) => startWebhookServer(db.env, { WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_MS / 1000), ...extra });
const newKey = () => unlimitedKey(db.env);

describe('fair delivery across accounts', () => {
  it("16 endpoints of one account that never answer, 100 events queued: another account's deliveries arrive with p90 commit-to-receipt within 2 s", async () => {
    // One retry a second after a timeout; three timeouts in a row pause an endpoint for 10 minutes (past this test).
    const server = await start({ WEBHOOK_RETRY_DELAYS_SECONDS: '1', WEBHOOK_BREAKER_PAUSE_SECONDS: '600' });
    const [silent, healthy] = await Promise.all([silentReceiver(), countingReceiver()]);
    onTestFinished(async () => {
      await Promise.all([silent.close(), healthy.close()]);
      await server.stop();
    });
    const [hostileKey, otherKey] = await Promise.all([newKey(), newKey()]);
    const hostile: number[] = [];
    for (let i = 0; i < 16; i++) hostile.push(await addEndpoint(server.baseUrl, hostileKey, `${silent.url}?endpoint=${i}`));
    const other = await addEndpoint(server.baseUrl, otherKey, healthy.url);

    // 100 events for the hostile account: 1,600 deliveries due, each hanging until the timeout.
    for (let i = 0; i < 100; i++) expect((await createPet(server.baseUrl, hostileKey, `hostile ${i}`)).status).toBe(201);
    // Then the other account's, spread over the time the hostile ones hold their workers.
    const created: number[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await createPet(server.baseUrl, otherKey, `other ${i}`);
      expect(res.status).toBe(201);
      created.push(res.id!);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await waitForDistinct(healthy, created.length, 60_000)).toBe(true);
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [other])).toBe(true);
    expect(tally(healthy, created)).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    const commitToReceipt = healthy.receipts.map((r) => r.at - Date.parse(r.createdAt));
    const p90 = percentile(commitToReceipt, 90);
    console.log(`fairness: other account's commit-to-receipt p50 ${percentile(commitToReceipt, 50)} ms, p90 ${p90} ms, max ${Math.max(...commitToReceipt)} ms; hostile connections open at once at most ${silent.peakOpen}`);
    expect(p90).toBeLessThanOrEqual(2000);

    // The hostile account never held more than its share (32 of 64 workers) at once.
    expect(silent.peakOpen).toBeGreaterThan(0);
    expect(silent.peakOpen).toBeLessThanOrEqual(32);

    // Each hostile endpoint timed out until its breaker opened: 3 timeouts in a row, and up to 7 more whose
    // attempts were under way then (8 workers per endpoint); every timeout from the third on says so in its log.
    const paused = 'timeouts in a row: deliveries to this endpoint paused until';
    expect(await waitFor(async () => {
      const logs = await Promise.all(hostile.map((id) => allDeliveries(server.baseUrl, hostileKey, id)));
      return logs.every((rows) => rows.length >= 3);
    }, 60_000, 500)).toBe(true);
    // Paused for 10 minutes: once no attempt is running, the logs are final for this test (the rest wait out the pause).
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, hostile, 30_000, ['active'])).toBe(true);
    const logs = await Promise.all(hostile.map((id) => allDeliveries(server.baseUrl, hostileKey, id)));
    for (const rows of logs) {
      expect(rows.length).toBeGreaterThanOrEqual(3);
      expect(rows.length).toBeLessThanOrEqual(10);
      expect(rows.every((r) => r.responseStatus === null && r.error!.startsWith(`timeout after ${TIMEOUT_MS} ms`))).toBe(true);
      expect(rows.filter((r) => r.error!.includes(paused))).toHaveLength(rows.length - 2);
    }
    expect(silent.requests).toBe(logs.reduce((n, rows) => n + rows.length, 0));
  }, 180_000);
});

describe('bounded redelivery', () => {
  it('200 redeliverEvent calls for one event: one series while it is open (199 × 409), so exactly one more POST', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const server = await start();
    const receiver = await countingReceiver(0, held);
    onTestFinished(async () => {
      release();
      await receiver.close();
      await server.stop();
    });
    const key = await newKey();
    const endpoint = await addEndpoint(server.baseUrl, key, receiver.url);
    const pet = await createPet(server.baseUrl, key, 'redelivered');
    expect(pet.status).toBe(201);
    expect(await waitForDistinct(receiver, 1)).toBe(true);
    const eventId = receiver.receipts[0]!.webhookId;

    // 200 calls, 20 at a time, while the first redelivery's POST is held by the receiver.
    const statuses: Array<[number, string | undefined]> = [];
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => call(server.baseUrl, key, `/v1/events/${eventId}/redeliver`, { method: 'POST' })));
      statuses.push(...answers.map((a): [number, string | undefined] => [a.status, a.body?.code]));
    }
    const counts = new Map<string, number>();
    for (const [status, code] of statuses) counts.set(`${status} ${code ?? ''}`.trim(), (counts.get(`${status} ${code ?? ''}`.trim()) ?? 0) + 1);
    expect(Object.fromEntries(counts)).toEqual({ '202': 1, '409 redelivery_in_progress': 199 });

    release();
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpoint])).toBe(true);
    // The first delivery and the one redelivery: the same webhook-id twice, nothing else.
    expect(receiver.receipts.map((r) => r.webhookId)).toEqual([eventId, eventId]);
    const log: DeliveryRow[] = await allDeliveries(server.baseUrl, key, endpoint);
    expect(log.map((d) => [d.eventId, d.attempt, d.responseStatus])).toEqual([[eventId, 1, 204], [eventId, 1, 204]]);

    // The series ended with its delivery: the next call starts another.
    expect((await call(server.baseUrl, key, `/v1/events/${eventId}/redeliver`, { method: 'POST' })).status).toBe(202);
    expect(await waitFor(() => receiver.receipts.length === 3, 30_000)).toBe(true);
  }, 120_000);
});

import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { unlimitedKey } from '../helpers/apiKeys.js';
import type { Server } from '../helpers/processes.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import {
  addEndpoint, allDeliveries, countingReceiver, createPet, percentile, tally, waitForDistinct, waitForSettledQueue, startWebhookServer,
} from '../helpers/webhookFaults.js';

/**
 * Webhooks under load, on server processes: creates at full speed from 8 clients, one account,
 * one endpoint at a local receiver that always answers 2xx. Every pet.created reaches it exactly
 * once (by webhook-id), with one instance and with two on one database.
 */
let db: ServerDatabase;
beforeAll(async () => {
  db = await createServerDatabase('webhooks_load');
});
afterAll(() => db?.drop());

const start = (env: Record<string, string> = {}) => startWebhookServer(db.env, env);

/**
 * Creates from `clients` loops for `ms` and at least `atLeast` in all (a loaded machine is slow), spread over
 * `servers` in turn; the 201s with when each answered.
 */
async function createsAtFullSpeed(servers: Server[], key: string, clients: number, ms: number, atLeast: number) {
  const created: Array<{ id: number; answeredAt: number }> = [];
  const failed: number[] = [];
  const until = Date.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until || n < atLeast) {
        const i = n++;
        const res = await createPet(servers[i % servers.length]!.baseUrl, key, `load ${i}`);
        if (res.status === 201) created.push({ id: res.id!, answeredAt: res.answeredAt });
        else failed.push(res.status);
      }
    }),
  );
  return { created, failed };
}

describe('webhooks under load', () => {
  it('8 clients creating for 4 s on one instance: every pet.created reaches the receiver exactly once', async () => {
    const key = await unlimitedKey(db.env);
    const server = await start();
    onTestFinished(async () => void (await server.stop()));
    const receiver = await countingReceiver();
    onTestFinished(() => receiver.close());
    const endpointId = await addEndpoint(server.baseUrl, key, receiver.url);

    const began = Date.now();
    const { created, failed } = await createsAtFullSpeed([server], key, 8, 4000, 200);
    const createsMs = Date.now() - began;
    expect(failed).toEqual([]);
    expect(created.length).toBeGreaterThanOrEqual(200);
    expect(await waitForDistinct(receiver, created.length)).toBe(true);
    const drainedMs = Math.max(...receiver.receipts.map((r) => r.at)) - began;
    // Nothing left in the queue: anything sent twice has shown itself.
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true);

    expect(tally(receiver, created.map((c) => c.id))).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    expect(receiver.receipts).toHaveLength(created.length);
    // One attempt each, all 2xx, as listWebhookDeliveries shows them.
    const log = await allDeliveries(server.baseUrl, key, endpointId);
    expect(log).toHaveLength(created.length);
    expect(log.filter((d) => d.attempt === 1 && d.responseStatus === 204 && d.error === null)).toHaveLength(created.length);

    // Commit lies between the transaction's start (the event's createdAt) and the 201's arrival.
    const answeredAt = new Map(created.map((c) => [c.id, c.answeredAt]));
    const fromAnswer = receiver.receipts.map((r) => r.at - answeredAt.get(r.objectId)!);
    const fromCreatedAt = receiver.receipts.map((r) => r.at - Date.parse(r.createdAt));
    const line = (xs: number[]) => `p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms, max ${Math.max(...xs)} ms`;
    console.log(
      `webhooks load: ${created.length} creates in ${createsMs} ms (${((created.length * 1000) / createsMs).toFixed(0)}/s); ` +
        `${receiver.receipts.length} deliveries by ${drainedMs} ms (${((receiver.receipts.length * 1000) / drainedMs).toFixed(0)}/s)\n` +
        `  201-to-receipt ${line(fromAnswer)}\n  createdAt-to-receipt ${line(fromCreatedAt)}`,
    );
  }, 180_000);

  it('two instances on one database, creates spread over both: every pet.created reaches the receiver exactly once, delivered by the two between them', async () => {
    const key = await unlimitedKey(db.env);
    const servers = [await start(), await start()];
    onTestFinished(async () => void (await Promise.all(servers.map((s) => s.stop()))));
    const receiver = await countingReceiver();
    onTestFinished(() => receiver.close());
    const endpointId = await addEndpoint(servers[0]!.baseUrl, key, receiver.url);

    const { created, failed } = await createsAtFullSpeed(servers, key, 8, 3000, 100);
    expect(failed).toEqual([]);
    expect(created.length).toBeGreaterThanOrEqual(100);
    expect(await waitForDistinct(receiver, created.length)).toBe(true);
    expect(await waitForSettledQueue(db.env.DATABASE_URL!, [endpointId])).toBe(true);

    expect(tally(receiver, created.map((c) => c.id))).toEqual({ duplicates: 0, missing: 0, unexpected: 0 });
    expect(receiver.receipts).toHaveLength(created.length);
    const log = await allDeliveries(servers[1]!.baseUrl, key, endpointId);
    expect(log.filter((d) => d.attempt === 1 && d.responseStatus === 204)).toHaveLength(created.length);
    expect(log).toHaveLength(created.length);

    // The instances' delivered counts add up to the whole, each delivery made by one of them. (One endpoint's bound is
    // the fleet's, so one instance may hold all of it and deliver everything: docs/WEBHOOKS.md, "Bounds".)
    const delivered = await Promise.all(
      servers.map(async (s) => Number(/animal_store_webhook_deliveries_total\{outcome="delivered"\} (\d+)/.exec(await (await fetch(s.metricsUrl)).text())?.[1] ?? 0)),
    );
    console.log(`two instances: ${created.length} events, delivered ${delivered.join(' + ')}`);
    expect(delivered[0]! + delivered[1]!).toBe(created.length);
  }, 180_000);
});

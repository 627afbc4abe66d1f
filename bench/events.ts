import pg from 'pg';
import { measure, percentile, type Arm, type Measurement } from './load.js';
import type { Receiver } from './receiver.js';

/** What the webhook part of the benchmark found (issue 28). */
export interface EventsResult {
  /** The backlog the throughput rounds queued, delivered by a worker started afterwards. */
  drain: { events: number; deliveries: number; seconds: number; perSecond: number };
  /** createPet at a fixed rate through the worker, its events delivered as they come (its CPU per create includes the delivery). */
  rate: number;
  creates: Measurement;
  /** From each event's change (createdAt) to its receipt, ms. */
  p50: number;
  p99: number;
  invalid?: string;
}

/** Subscribes the key's account to pet.created at the receiver (createWebhookEndpoint). */
export async function subscribe(baseUrl: string, key: string, url: string): Promise<void> {
  const res = await fetch(`${baseUrl}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, eventTypes: ['pet.created'], description: 'bench' }),
  });
  if (res.status !== 201) throw new Error(`createWebhookEndpoint → ${res.status}: ${await res.text()}`);
}

/** Waits until the receiver has every pet.created event of the database once; false after `timeoutMs`. */
async function allReceived(databaseUrl: string, receiver: Receiver, timeoutMs: number): Promise<{ events: number; ok: boolean }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const events = (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE type = 'pet.created'`)).rows[0]!.n;
    const deadline = Date.now() + timeoutMs;
    while (receiver.counts().events < events && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    return { events, ok: receiver.counts().events >= events };
  } finally {
    await client.end();
  }
}

/**
 * Once the worker (`arm.pid`, the service with its delivery workers on) runs: how fast it delivers
 * the backlog, then commit-to-receipt while `arm` (createPet) runs at `rate` for `seconds`.
 * Invalid when an event is missing or arrived twice.
 */
export async function measureDeliveries(
  databaseUrl: string,
  receiver: Receiver,
  arm: Arm,
  opts: { rate: number; seconds: number; connections: number },
): Promise<EventsResult> {
  const backlog = await allReceived(databaseUrl, receiver, 600_000);
  const drained = receiver.counts();
  const [firstAt, lastAt] = receiver.span();
  const seconds = (lastAt - firstAt) / 1000;
  const drain = { ...drained, seconds, perSecond: (drained.events - 1) / seconds };

  receiver.takeDelays();
  const creates = await measure(arm, opts);
  const live = await allReceived(databaseUrl, receiver, 60_000);
  const delays = receiver.takeDelays();
  const final = receiver.counts();
  const problems = [
    ...(backlog.ok && live.ok ? [] : [`${live.events - final.events} of ${live.events} events never arrived`]),
    ...(final.deliveries > final.events ? [`${final.deliveries - final.events} events arrived twice`] : []),
  ];
  return { drain, rate: opts.rate, creates, p50: percentile(delays, 0.5), p99: percentile(delays, 0.99), ...(problems.length ? { invalid: problems.join(', ') } : {}) };
}

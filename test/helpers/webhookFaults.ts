import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { DELIVERY_QUEUE } from '../../src/webhooks/queue.js';
import { waitFor } from './poll.js';
import { startServer } from './processes.js';

/** Settings for webhook fault runs on server processes: local receivers allowed, a quick poll, a known sealing key. */
export const FAULT_WEBHOOK_ENV = {
  LOG_LEVEL: 'warn',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_POLL_SECONDS: '0.5',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
};

/** The service in a process of its own on the database of `dbEnv`, with FAULT_WEBHOOK_ENV and then `env`. */
export const startWebhookServer = (dbEnv: Record<string, string>, env: Record<string, string> = {}) =>
  startServer('src/server.ts', { ...dbEnv, ...FAULT_WEBHOOK_ENV, ...env }, { readyPath: '/readyz', stdout: 'ignore' });

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One JSON request to a server process with `key`; a refused connection is status 0. */
export async function call<T = any>(baseUrl: string, key: string, path: string, opts: { method?: string; body?: unknown } = {}): Promise<Answer<T>> {
  const method = opts.method ?? (opts.body === undefined ? 'GET' : 'POST');
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(opts.body !== undefined && { 'content-type': 'application/json' }) },
      ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
  } catch {
    return { status: 0, body: undefined as T, headers: new Headers() };
  }
}

/** createPet; resolves with its status, the pet's id on a 201, and when the answer arrived. */
export async function createPet(baseUrl: string, key: string, name: string): Promise<{ status: number; id?: number; answeredAt: number }> {
  const res = await call(baseUrl, key, '/v1/pets', { body: { name, categoryId: 1 } });
  return { status: res.status, id: res.status === 201 ? (res.body.id as number) : undefined, answeredAt: Date.now() };
}

/** createWebhookEndpoint for every type; returns its id. */
export async function addEndpoint(baseUrl: string, key: string, url: string): Promise<number> {
  const res = await call(baseUrl, key, '/v1/webhook-endpoints', { body: { url, eventTypes: ['*'] } });
  if (res.status !== 201) throw new Error(`createWebhookEndpoint answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as number;
}

/** One attempt as listWebhookDeliveries answers it (openapi.yaml's WebhookDelivery). */
export type DeliveryRow = components['schemas']['WebhookDelivery'];

/** Every attempt listWebhookDeliveries lists for an endpoint, following `Link` (newest first). */
export async function allDeliveries(baseUrl: string, key: string, endpointId: number): Promise<DeliveryRow[]> {
  const rows: DeliveryRow[] = [];
  let path: string | undefined = `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`;
  while (path) {
    const res: Answer<DeliveryRow[]> = await call<DeliveryRow[]>(baseUrl, key, path);
    if (res.status !== 200) throw new Error(`listWebhookDeliveries answered ${res.status}`);
    rows.push(...res.body);
    const next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
    path = next ? next.replace(/^https?:\/\/[^/]+/, '') : undefined;
  }
  return rows;
}

export interface Receipt {
  webhookId: string;
  type: string;
  objectId: number;
  createdAt: string;
  at: number;
}

export interface CountingReceiver {
  url: string;
  port: number;
  /** Every request, in order of arrival. */
  receipts: Receipt[];
  /** Receipts per webhook-id. */
  counts(): Map<string, number>;
  close(): Promise<void>;
}

/**
 * A receiver that answers every request 204 and notes when each arrived; on `port` when given (one
 * that was down). With `answerAfter`, it holds each answer until that promise settles (and at once after).
 */
export async function countingReceiver(port = 0, answerAfter: Promise<void> = Promise.resolve()): Promise<CountingReceiver> {
  const receipts: Receipt[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; createdAt: string; data: { object: { id: number } } };
      receipts.push({ webhookId: String(req.headers['webhook-id']), type: event.type, objectId: event.data.object.id, createdAt: event.createdAt, at });
      void answerAfter.then(() => res.writeHead(204).end());
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    receipts,
    counts() {
      const counts = new Map<string, number>();
      for (const r of receipts) counts.set(r.webhookId, (counts.get(r.webhookId) ?? 0) + 1);
      return counts;
    },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** Waits (bounded, to tell a hang) until `receiver` has heard `count` distinct webhook-ids. */
export async function waitForDistinct(receiver: CountingReceiver, count: number, timeoutMs = 90_000): Promise<boolean> {
  return waitFor(() => receiver.counts().size >= count, timeoutMs, 100);
}

/**
 * Waits (bounded, to tell a hang) until the delivery queue in `databaseUrl` has settled for the
 * endpoints `endpointIds`: no delivery intent of theirs in the outbox, and no job of theirs waiting,
 * scheduled for a retry or running, in pg-boss's job table (its documented schema, read as
 * src/webhooks/plugin.ts reads it). A job leaves 'active' only
 * once its request has been answered or cut off, so whatever those endpoints are to hear they have
 * heard by then: a receiver's counts are final, a late duplicate included. `states`: only jobs in
 * these (['active']: none running, though some may wait, as a paused endpoint's do).
 */
export async function waitForSettledQueue(databaseUrl: string, endpointIds: number[], timeoutMs = 90_000, states = ['created', 'retry', 'active']): Promise<boolean> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await waitFor(async () => {
      // An intent still in the outbox is a delivery waiting to be queued (docs/WEBHOOKS.md, "From a change to a delivery").
      const { rows } = await client.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM pgboss.job
                  WHERE name = $1 AND state::text = ANY($3::text[]) AND (data->>'endpointId')::int = ANY($2::int[]))::int
              + CASE WHEN 'created' = ANY($3::text[]) THEN (SELECT count(*) FROM webhook_outbox WHERE endpoint_id = ANY($2::bigint[]))::int ELSE 0 END AS n`,
        [DELIVERY_QUEUE, endpointIds, states],
      );
      return rows[0]!.n === 0;
    }, timeoutMs, 50);
  } finally {
    await client.end();
  }
}

/** Duplicates (receipts beyond the first per webhook-id) and the created pets whose pet.created never came. */
export function tally(receiver: CountingReceiver, petIds: number[]) {
  const created = receiver.receipts.filter((r) => r.type === 'pet.created');
  const heard = new Set(created.map((r) => r.objectId));
  return {
    duplicates: receiver.receipts.length - receiver.counts().size,
    missing: petIds.filter((id) => !heard.has(id)).length,
    unexpected: [...heard].filter((id) => !petIds.includes(id)).length,
  };
}

/** The p-th percentile (0–100) of `values`, nearest rank. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * A victim account's run beside hostile ones: 30 creates, one every 100 ms (spread over `baseUrls` in
 * turn); waits for each pet.created at `receiver`, checks that each came exactly once, and answers
 * their commit-to-receipt times (ms).
 */
export async function victimRun(baseUrls: string[], key: string, receiver: CountingReceiver, label: string): Promise<number[]> {
  const created: number[] = [];
  const began = Date.now();
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, began + i * 100 - Date.now())));
    const res = await createPet(baseUrls[i % baseUrls.length]!, key, `${label} ${i}`);
    if (res.status !== 201) throw new Error(`createPet answered ${res.status}`);
    created.push(res.id!);
  }
  const mine = () => receiver.receipts.filter((r) => created.includes(r.objectId));
  if (!(await waitFor(() => new Set(mine().map((r) => r.objectId)).size === created.length, 30_000, 50))) {
    throw new Error(`${label}: ${new Set(mine().map((r) => r.objectId)).size} of 30 deliveries arrived within 30 s`);
  }
  // A duplicate would come at once after its first (the deliveries are settled by then): a short wait is enough to see one.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const heard = mine();
  if (heard.length !== 30 || new Set(heard.map((r) => r.webhookId)).size !== 30) throw new Error(`${label}: ${heard.length} receipts of 30 deliveries`);
  return heard.map((r) => r.at - Date.parse(r.createdAt));
}

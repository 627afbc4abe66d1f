import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiResponse } from './http.js';
import type { TestServer } from './testServer.js';
import { waitFor } from './poll.js';

/** Environment for servers that deliver to local receivers at once: private targets allowed, retries without delay. */
export const WEBHOOK_TEST_ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS_SECONDS: '0,0',
  WEBHOOK_POLL_SECONDS: '0.5',
  WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
};

export interface EventBody {
  id: string;
  type: string;
  createdAt: string;
  data: { object: Record<string, unknown> };
}

/** Every event `key` can read (optionally of one type), following `Link` from the first page; also the pages' sizes. */
export async function readAllEvents(server: TestServer, key: string, query = 'limit=100'): Promise<EventBody[]> {
  const events: EventBody[] = [];
  let url: string | undefined = `/v1/events?${query}`;
  while (url) {
    const res: ApiResponse<EventBody[]> = await server.request<EventBody[]>(url, { key });
    if (res.status !== 200) throw new Error(`listEvents answered ${res.status}: ${res.text}`);
    events.push(...res.body);
    url = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
  }
  return events;
}

/** The first event `matches` accepts, waited for (an event lists once the transactions begun before it have ended, anywhere on the server). */
export async function waitForEvent(server: TestServer, key: string, matches: (event: EventBody) => boolean, query?: string): Promise<EventBody> {
  let found: EventBody | undefined;
  await waitFor(async () => (found = (await readAllEvents(server, key, query)).find(matches)) !== undefined, 45_000, 250);
  return found!;
}

/**
 * Polls listEvents until `key` reads `count` events. An event is listed once every transaction
 * that began before it, anywhere in the cluster, has ended: on a test cluster shared with other
 * suites that can take seconds, hence the generous bound (it only tells a hang). Use keys whose
 * plan allows the polling (business: 1000 a minute).
 */
export async function waitForEvents(server: TestServer, key: string, count: number, query?: string): Promise<EventBody[]> {
  let events: EventBody[] = [];
  await waitFor(async () => (events = await readAllEvents(server, key, query)).length >= count, 45_000, 250);
  return events;
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** What the next requests are answered with, in order; 200 once they run out. */
  answers: number[];
  close(): Promise<void>;
}

/** A local HTTP server that records every request (headers and raw body) and answers from `answers`. */
export async function startReceiver(path = '/hook', respond?: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<Receiver> {
  const received: Received[] = [];
  const answers: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (respond) return respond(req, res);
      res.statusCode = answers.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    answers,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/** Creates an endpoint for `key` and returns its body (with the secret). */
export async function createEndpoint(server: TestServer, key: string, url: string, eventTypes: string[] = ['*']) {
  const res = await server.request(`/v1/webhook-endpoints`, { key, body: { url, eventTypes } });
  if (res.status !== 201) throw new Error(`createWebhookEndpoint answered ${res.status}: ${res.text}`);
  return res.body as { id: number; secret: string; status: string; url: string; eventTypes: string[] };
}

import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { waitFor } from '../helpers/poll.js';
import { startServer, type Server } from '../helpers/processes.js';
import { outcomeOf, type OneShot } from '../helpers/oneShot.js';
import { parsePrometheus, sampleValue } from '../helpers/prometheus.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/** A connection from `localAddress` (a loopback address of its own) kept open by the test. */
interface Held {
  socket: net.Socket;
  closed: boolean;
  /** Sends a request on it and resolves with the status line of the answer. */
  request(head: string): Promise<string>;
}

function hold(port: number, localAddress: string): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    let received = '';
    let waiting: ((statusLine: string) => void) | undefined;
    const held: Held = {
      socket,
      closed: false,
      request(head) {
        received = '';
        socket.write(head);
        return new Promise((r) => (waiting = r));
      },
    };
    socket.on('data', (chunk) => {
      received += chunk;
      // Every answer here is small: a whole one has its headers and its body (or is a 100 Continue).
      const [headers, body = ''] = received.split('\r\n\r\n');
      const length = Number(/\r\ncontent-length: (\d+)/i.exec(headers!)?.[1] ?? 0);
      if (received.includes('\r\n\r\n') && (headers!.startsWith('HTTP/1.1 100') || body.length >= length)) waiting?.(headers!.split('\r\n')[0]!);
    });
    socket.on('error', () => {});
    socket.on('close', () => (held.closed = true));
    socket.once('connect', () => resolve(held));
    socket.once('error', reject);
  });
}

/** A connection that has made one request and now idles, as a keep-alive client leaves it. */
async function parkIdle(port: number, localAddress: string): Promise<Held> {
  const held = await hold(port, localAddress);
  expect(await held.request('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('HTTP/1.1 200 OK');
  return held;
}

/** One GET on a connection of its own from `localAddress`. */
function getFrom(port: number, localAddress: string, path = '/healthz'): Promise<OneShot> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, localAddress, agent: false, timeout: 15_000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end();
  });
}

/** A sample of the server's metrics listener (METRICS_PORT: its connections are not the API's). */
async function metric(server: Server, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  return sampleValue(parsePrometheus(await (await fetch(server.metricsUrl)).text()), name, labels);
}

const logLines = (stdout: string, msg: RegExp) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { msg: string; level: number; count?: number; address?: string })
    .filter((l) => msg.test(l.msg));

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

describe('idle keep-alive connections filling MAX_CONNECTIONS', () => {
  let server: Server;
  let port: number;
  const parked: Held[] = [];
  beforeAll(async () => {
    server = await startServer('src/server.ts', { ...db.env, MAX_CONNECTIONS: '300', LOG_LEVEL: 'warn' }, { stdout: 'ignore' });
    port = Number(new URL(server.baseUrl).port);
  });
  afterAll(async () => {
    for (const p of parked) p.socket.destroy();
    await server?.stop();
  });

  it('makes room for a new client by closing the longest idle ones: 10 of 10 served', async () => {
    // Nothing else is open on the API's port.
    expect(await metric(server, 'animal_store_connections_open')).toBe(0);
    // 300 connections from ten addresses, in turn, each idle after one request.
    for (let i = 0; i < 300; i++) parked.push(await parkIdle(port, `127.0.0.${2 + (i % 10)}`));
    expect(parked.filter((p) => p.closed)).toEqual([]);

    const answers: OneShot[] = [];
    for (let i = 0; i < 10; i++) answers.push(await getFrom(port, '127.0.0.1'));
    expect(answers.map(outcomeOf)).toEqual(Array(10).fill('200'));

    // The oldest parked ones made the room, and no more than a few.
    await waitFor(() => parked.some((p) => p.closed), 5000, 20);
    const closed = parked.flatMap((p, i) => (p.closed ? [i] : []));
    console.log(`MAX_CONNECTIONS=300 full of idle connections: new client ${answers.filter((a) => a.status === 200).length} of 10 served; parked ones closed: ${closed.length} (#${closed.join(', #')})`);
    expect(closed.length).toBeGreaterThanOrEqual(1);
    expect(closed.length).toBeLessThanOrEqual(10);
    expect(closed).toEqual(closed.map((_, i) => i));
    expect(await metric(server, 'animal_store_idle_connections_closed_total', { cap: 'total' })).toBe(closed.length);
    expect(await metric(server, 'animal_store_connections_refused_total', { cap: 'total' })).toBeUndefined();
  });

  it('closes the longest idle first, not the oldest: a parked connection used again is kept', async () => {
    const open = parked.filter((p) => !p.closed);
    const reused = open.slice(0, 10); // the oldest still open
    for (const p of reused) expect(await p.request('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('HTTP/1.1 200 OK');
    const before = parked.filter((p) => p.closed).length;
    // New clients that stay: each needs a place.
    const newcomers: Held[] = [];
    for (let i = 0; i < 20; i++) newcomers.push(await parkIdle(port, '127.0.0.1'));
    // 296 parked and 20 newcomers do not fit in 300: at least 16 had to go.
    expect(await waitFor(() => parked.filter((p) => p.closed).length >= before + 16, 5000, 20)).toBe(true);
    expect(reused.filter((p) => p.closed)).toEqual([]);
    expect(newcomers.filter((p) => p.closed)).toEqual([]);
    // The ones closed for the newcomers are the next oldest after those reused.
    const closedNow = open.flatMap((p, i) => (p.closed ? [i] : []));
    console.log(`20 newcomers: closed ${closedNow.length} of the parked (oldest open first: #${closedNow.join(', #')}), 0 of the 10 reused`);
    expect(closedNow[0]).toBe(10);
    for (const p of newcomers) p.socket.destroy();
  });
});

describe('one address holding MAX_CONNECTIONS_PER_ADDRESS', () => {
  let server: Server;
  let port: number;
  let key: string;
  let stdout = '';
  const held: Held[] = [];
  beforeAll(async () => {
    key = await createKey(db.env, { plan: 'enterprise', perMinute: 1_000_000, perDay: 10_000_000 });
    server = await startServer('src/server.ts', {
      ...db.env,
      MAX_CONNECTIONS_PER_ADDRESS: '256',
      LOG_LEVEL: 'warn',
      // Long enough that the requests held open below are still in progress at the end.
      REQUEST_TIMEOUT_SECONDS: '60',
      HEADERS_TIMEOUT_SECONDS: '60',
    });
    server.child.stdout!.on('data', (chunk) => (stdout += chunk));
    port = Number(new URL(server.baseUrl).port);
  });
  afterAll(async () => {
    for (const h of held) h.socket.destroy();
    await server?.stop();
  });

  it('serves another client behind the same address when the 256 are idle, closing idle ones to make room', async () => {
    for (let i = 0; i < 256; i++) held.push(await parkIdle(port, '127.0.0.20'));
    const answers: OneShot[] = [];
    for (let i = 0; i < 10; i++) answers.push(await getFrom(port, '127.0.0.20'));
    expect(answers.map(outcomeOf)).toEqual(Array(10).fill('200'));
    const closed = held.filter((h) => h.closed).length;
    console.log(`256 idle from one address: another client there ${answers.filter((a) => a.status === 200).length} of 10 served; idle ones closed: ${closed}`);
    expect(closed).toBeGreaterThanOrEqual(1);
    expect(await metric(server, 'animal_store_idle_connections_closed_total', { cap: 'address' })).toBe(closed);
    expect(await metric(server, 'animal_store_connections_refused_total', { cap: 'address' })).toBeUndefined();
  });

  it('refuses, counts and logs (once per interval) new connections when all 256 carry a request in progress', async () => {
    // Requests whose bodies never come: each is in progress once its 100 Continue is back.
    const busy = await Promise.all(Array.from({ length: 256 }, () => hold(port, '127.0.0.21')));
    held.push(...busy);
    const continues = await Promise.all(
      busy.map((b) =>
        b.request(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`),
      ),
    );
    expect(continues).toEqual(Array(256).fill('HTTP/1.1 100 Continue'));

    const answers: OneShot[] = [];
    for (let i = 0; i < 10; i++) answers.push(await getFrom(port, '127.0.0.21'));
    expect(answers.filter((a) => a.status !== undefined)).toEqual([]); // closed before anything was read
    expect(busy.filter((b) => b.closed)).toEqual([]);
    // Another address is not affected.
    expect((await getFrom(port, '127.0.0.22')).status).toBe(200);

    const refused = await metric(server, 'animal_store_connections_refused_total', { cap: 'address' });
    console.log(`256 busy from one address: 10 more connections → ${answers.map(outcomeOf).join(', ')}; refused_total{cap="address"} ${refused}`);
    expect(refused).toBe(10);
    expect(await waitFor(() => logLines(stdout, /^connection refused/).length > 0, 5000)).toBe(true); // lines are written in batches
    const lines = logLines(stdout, /^connection refused/);
    expect(lines).toHaveLength(1); // the other 9 are counted toward the next line, at most one per 10 s
    expect(lines[0]).toMatchObject({ level: 40, count: 1, address: '127.0.0.21', msg: 'connection refused: MAX_CONNECTIONS_PER_ADDRESS 256 reached and none idle' });
  });
});

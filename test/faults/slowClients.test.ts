import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const REQUEST_TIMEOUT_S = 2;
let server: TestServer;
let port: number;
beforeAll(async () => {
  server = await startTestServer({
    REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S),
    HEADERS_TIMEOUT_SECONDS: '1',
    RATE_LIMIT_ANONYMOUS: '100000/1000000',
  });
  port = Number(new URL(server.baseUrl).port);
});
afterAll(() => server?.close());

interface RawExchange {
  socket: net.Socket;
  /** Everything the server sent, once it closed the connection (or the test gave up). */
  received: Promise<{ text: string; closedAfterMs: number }>;
}

/** Opens a raw connection (from `localAddress`, a loopback address of its own) and records what comes back. */
function rawConnection(localAddress = '127.0.0.1'): RawExchange {
  const started = Date.now();
  const socket = net.connect({ port, host: '127.0.0.1', localAddress });
  let text = '';
  socket.on('data', (chunk) => (text += chunk.toString()));
  socket.on('error', () => {});
  const received = new Promise<{ text: string; closedAfterMs: number }>((resolve) =>
    socket.once('close', () => resolve({ text, closedAfterMs: Date.now() - started })),
  );
  return { socket, received };
}

const postHead = (headers: string) =>
  `POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}\r\n`;

describe('slow and greedy clients', () => {
  it('cuts off a body trickling one byte a second with 408 in the Error shape, within the request deadline', async () => {
    const slow = rawConnection();
    slow.socket.write(postHead(`Authorization: Bearer ${server.key}\r\nContent-Length: 100\r\n`));
    const trickle = setInterval(() => slow.socket.writable && slow.socket.write(' '), 1000);
    // Meanwhile another client is served.
    expect((await server.request('/v1/pets')).status).toBe(200);
    const { text, closedAfterMs } = await slow.received;
    clearInterval(trickle);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toMatch(/\r\nx-request-id: \S+\r\n/i);
    expect(JSON.parse(text.split('\r\n\r\n')[1]!)).toEqual({ code: 'request_timeout', message: expect.any(String), status: 408 });
    // The deadline plus Node's check interval (0.5 s), with room for a loaded machine.
    expect(closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_S * 1000 + 2500);
    expect(await server.petCount()).toBe(0);
  });

  it('answers a request refused before its body was read, then closes instead of reading the body', async () => {
    const c = rawConnection();
    c.socket.write(postHead('Content-Length: 60000\r\n')); // no key, and the body never comes
    const { text, closedAfterMs } = await c.received;
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
    expect(closedAfterMs).toBeLessThan(1500); // well before the request deadline
  });

  it('sends 100 Continue only once the request has passed authentication', async () => {
    const refused = rawConnection();
    refused.socket.write(postHead('Content-Length: 30\r\nExpect: 100-continue\r\n'));
    const r = await refused.received;
    expect(r.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.text).not.toMatch(/100 Continue/);

    const accepted = rawConnection();
    const body = '{"name":"Patient","categoryId":1}';
    accepted.socket.write(postHead(`Authorization: Bearer ${server.key}\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n`));
    await new Promise<void>((resolve) => accepted.socket.once('data', () => resolve()));
    accepted.socket.write(body);
    const a = await accepted.received;
    expect(a.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
  });

  it('keeps serving others while one address holds 1,000 trickling connections', async () => {
    // An authenticated attacker: its bodies are read (slowly) until the request deadline, then it reconnects.
    const key = await server.createKey('enterprise', { perMinute: 1_000_000, perDay: 10_000_000 });
    let timedOut = 0;
    let stop = false;
    const attackers = new Set<net.Socket>();
    const attack = () => {
      if (stop) return;
      const { socket, received } = rawConnection('127.0.0.2');
      attackers.add(socket);
      socket.once('connect', () => socket.write(postHead(`Authorization: Bearer ${key}\r\nContent-Length: 1000\r\n`)));
      void received.then(({ text }) => {
        attackers.delete(socket);
        if (text.startsWith('HTTP/1.1 408 ')) timedOut++;
        setTimeout(attack, 100); // keep the pressure: one closed, another opened
      });
    };
    for (let i = 0; i < 1000; i++) attack();
    const trickle = setInterval(() => {
      for (const s of attackers) if (s.writable) s.write('x');
    }, 1000);

    const outcomes: number[] = [];
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const batch = await Promise.all(
        Array.from({ length: 10 }, () => server.request('/v1/pets?limit=1', { key }).then((r) => r.status, () => 0)),
      );
      outcomes.push(...batch);
    }
    stop = true;
    clearInterval(trickle);
    for (const s of attackers) s.destroy();

    const ok = outcomes.filter((s) => s === 200).length;
    console.log(`legitimate: ${ok}/${outcomes.length} succeeded; attacker connections answered 408: ${timedOut}`);
    expect(outcomes.length).toBeGreaterThanOrEqual(50);
    expect(ok / outcomes.length).toBeGreaterThanOrEqual(0.99);
    expect(timedOut).toBeGreaterThanOrEqual(1000); // each held to the request deadline (2 s), no longer
  }, 30_000);
});

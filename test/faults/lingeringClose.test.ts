import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unlimitedKey } from '../helpers/apiKeys.js';
import { startServer, type Server } from '../helpers/processes.js';
import { BODY_LIMIT, LINGER_MS } from '../../src/limits.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/** Answers sent while the client is still sending: it must get to read them (nginx's lingering close), within bounds. */
/** Past the linger tests' bound (LINGER_MS + 2 s): a close by the request deadline would fail them. */
const REQUEST_TIMEOUT_S = 5;
let db: TestDatabase;
let server: Server;
let port: number;
let key: string;
beforeAll(async () => {
  db = await createTestDatabase();
  key = await unlimitedKey(db.env);
  server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'warn', REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S) }, { stdout: 'ignore' });
  port = Number(new URL(server.baseUrl).port);
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/**
 * Bytes the server has read from its end of the connection whose client port is `clientPort`:
 * what its kernel received less what still waits unread (ss: bytes_received, Recv-Q). Counted
 * on that socket alone, so nothing else the process reads meanwhile (its database, Redis) counts.
 */
function serverReadFrom(clientPort: number): number {
  const line = execFileSync('ss', ['-tniH', 'src', `127.0.0.1:${port}`, 'dst', `127.0.0.1:${clientPort}`], { encoding: 'utf8' });
  const unread = Number(line.trim().split(/\s+/)[1]);
  const received = Number(/bytes_received:(\d+)/.exec(line)?.[1] ?? 0);
  return received - unread;
}

/**
 * A raw client that keeps sending after the answer (it does not close when the server does:
 * allowHalfOpen), as a misbehaving one might: what it read, how much it sent, when the server
 * ended its side (FIN) and when the connection was gone (the server's close, a reset).
 * `halfOpen: false`: a client that closes its side once the server has (Node's default).
 */
function sendOnAndOn(head: string, send: (socket: net.Socket, sent: { bytes: number }) => void, { halfOpen = true } = {}) {
  return new Promise<{ text: string; sentBytes: number; endedAfterMs: number; closedAfterMs: number; serverReadAtEnd: number }>((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen });
    const started = Date.now();
    const sent = { bytes: 0 };
    let text = '';
    let endedAfterMs = NaN;
    let serverReadAtEnd = NaN;
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', () => {});
    socket.on('end', () => {
      endedAfterMs = Date.now() - started;
      serverReadAtEnd = serverReadFrom(socket.localPort!);
    });
    socket.on('close', () => resolve({ text, sentBytes: sent.bytes, endedAfterMs, closedAfterMs: Date.now() - started, serverReadAtEnd }));
    socket.once('connect', () => {
      socket.write(head);
      send(socket, sent);
    });
  });
}

const postHead = (contentLength: number, extra = `Authorization: Bearer ${key}\r\n`) =>
  `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${extra}Content-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;

const trickle = (socket: net.Socket, sent: { bytes: number }) => {
  const timer = setInterval(() => (socket.writable ? socket.write('a', () => (sent.bytes += 1)) : clearInterval(timer)), 200);
  socket.once('close', () => clearInterval(timer));
};

const flood = (socket: net.Socket, sent: { bytes: number }) => {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = () => {
    while (socket.writable) {
      const more = socket.write(chunk);
      sent.bytes += chunk.length;
      if (!more) return void socket.once('drain', pump);
    }
  };
  pump();
};

describe('an error answer while the body is still arriving', () => {
  /** `count` uploads of `size` bytes one after another with fetch: how each ended (`413 payload_too_large`, or the socket error). */
  const uploads = async (count: number, size: number) => {
    const body = Buffer.alloc(size, 'a');
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < count; i++) {
      const outcome = await fetch(`${server.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
      }).then(
        async (res) => {
          const json = (await res.json()) as Record<string, unknown>;
          expect(json).toEqual({ code: 'payload_too_large', message: expect.any(String), status: 413 });
          return `${res.status} ${json.code}`;
        },
        (err: Error & { cause?: { code?: string } }) => `error ${err.cause?.code ?? err.message}`,
      );
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    }
    return outcomes;
  };

  it('reaches the client: 100 sequential 2 MiB uploads with fetch get 100 × 413 in the Error shape, no EPIPE or reset', async () => {
    expect(await uploads(100, 2 * 1024 * 1024)).toEqual({ '413 payload_too_large': 100 });
  }, 120_000);

  it('answers 100 sequential 16 MiB uploads with fetch (more than the kernel buffers hold) 100 × 413, no EPIPE or reset', async () => {
    expect(await uploads(100, 16 * 1024 * 1024)).toEqual({ '413 payload_too_large': 100 });
  }, 120_000);

  it('reads the rest of a body within the limit after an early answer, and serves the next request on the connection', async () => {
    // A 415 comes on the headers alone; the body (half the limit) is sent only once it is out.
    const body = 'a'.repeat(BODY_LIMIT / 2);
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n`;
    const next = `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`;
    const r = await sendOnAndOn(head, (socket) => socket.once('data', () => socket.write(body + next)), { halfOpen: false });
    expect(r.text.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 415', 'HTTP/1.1 200']);
    expect(r.text.split('HTTP/1.1 200')[0]).not.toMatch(/\r\nconnection: close\r\n/i);
  });

  it('reads none of a body declared over the limit: a flood is left in the kernel, FIN after the 413, closed at LINGER_MS', async () => {
    const head = postHead(1 << 30);
    const r = await sendOnAndOn(head, flood);
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(JSON.parse(r.text.split('\r\n\r\n')[1]!)).toEqual({ code: 'payload_too_large', message: expect.any(String), status: 413 });
    // The client got megabytes into the kernel's buffers; the server read at most what its
    // parser had taken before the 413 (a chunk or two; before: 4 MiB, read after the answer).
    expect(r.sentBytes).toBeGreaterThan(2 * 2 ** 20);
    expect(r.serverReadAtEnd).toBeGreaterThanOrEqual(head.length);
    expect(r.serverReadAtEnd).toBeLessThan(4 * BODY_LIMIT);
    // FIN once the answer is out; the close waits for LINGER_MS, so the client can read its answer first.
    expect(r.endedAfterMs).toBeLessThan(LINGER_MS / 2);
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(LINGER_MS - 100);
    expect(r.closedAfterMs).toBeLessThan(LINGER_MS + 2000);
  }, 30_000);

  it('cuts off a body that trickles on after the answer at LINGER_MS', async () => {
    const r = await sendOnAndOn(postHead(1 << 20), trickle);
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    // Closed by the linger bound, not by the request deadline (REQUEST_TIMEOUT_S) nor by the client.
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(LINGER_MS - 100);
    expect(r.closedAfterMs).toBeLessThan(LINGER_MS + 2000);
  }, 30_000);

  it('reads nothing of an unauthenticated upload: 401 with Connection: close, closed at once', async () => {
    const r = await sendOnAndOn(postHead(1 << 20, ''), trickle);
    expect(r.text).toMatch(/^HTTP\/1\.1 401 /);
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(r.closedAfterMs).toBeLessThan(LINGER_MS / 2);
  });

  it('sends no 100 Continue before a 413 on the Content-Length, and then reads nothing', async () => {
    const r = await sendOnAndOn(postHead(8 << 20, `Authorization: Bearer ${key}\r\nExpect: 100-continue\r\n`), () => {}, { halfOpen: false });
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.text).not.toMatch(/100 Continue/i);
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(r.text.split('\r\n\r\n')[1]!)).toEqual({ code: 'payload_too_large', message: expect.any(String), status: 413 });
  });

  it('still cuts off a body trickling past the request deadline with 408, and then closes within LINGER_MS', async () => {
    let timer: NodeJS.Timeout | undefined;
    const r = await sendOnAndOn(postHead(100), (socket) => {
      timer = setInterval(() => socket.writable && socket.write(' '), 1000);
    });
    clearInterval(timer);
    expect(r.text).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(r.text.split('\r\n\r\n')[1]!)).toEqual({ code: 'request_timeout', message: expect.any(String), status: 408 });
    // The deadline plus Node's check interval (0.5 s), then at most the linger bound.
    expect(r.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_S * 1000 + 500 + LINGER_MS + 2000);
  }, 60_000);
});

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer, type Server } from '../helpers/processes.js';
import { LINGER_BYTES, LINGER_MS } from '../../src/limits.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

/** Answers sent while the client is still sending: it must get to read them (nginx's lingering close). */
const REQUEST_TIMEOUT_S = 8;
let db: TestDatabase;
let server: Server;
let port: number;
let key: string;
beforeAll(async () => {
  db = await createTestDatabase();
  key = await createKey(db.env, { plan: 'enterprise', perMinute: 1_000_000, perDay: 10_000_000 });
  server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'warn', REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT_S) }, { stdout: 'ignore' });
  port = Number(new URL(server.baseUrl).port);
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

/**
 * A raw client that keeps sending after the answer (it does not close when the server does:
 * allowHalfOpen), as a misbehaving one might: what it read, how much it sent, when it was cut off.
 */
function sendOnAndOn(head: string, send: (socket: net.Socket, sent: { bytes: number }) => void) {
  return new Promise<{ text: string; sentBytes: number; closedAfterMs: number }>((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const started = Date.now();
    const sent = { bytes: 0 };
    let text = '';
    socket.on('data', (chunk) => (text += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve({ text, sentBytes: sent.bytes, closedAfterMs: Date.now() - started }));
    socket.once('connect', () => {
      socket.write(head);
      send(socket, sent);
    });
  });
}

const postHead = (contentLength: number) =>
  `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`;

describe('an error answer while the body is still arriving', () => {
  it('reaches the client: 100 sequential 2 MiB uploads with fetch get 100 × 413 in the Error shape, no EPIPE or reset', async () => {
    const body = Buffer.alloc(2 * 1024 * 1024, 'a');
    const outcomes: Record<string, number> = {};
    for (let i = 0; i < 100; i++) {
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
    console.log(`100 sequential 2 MiB uploads: ${JSON.stringify(outcomes)}`);
    expect(outcomes).toEqual({ '413 payload_too_large': 100 });
  }, 120_000);

  it('cuts off a body that trickles on after the answer within LINGER_MS', async () => {
    let timer: NodeJS.Timeout | undefined;
    const r = await sendOnAndOn(postHead(1 << 20), (socket, sent) => {
      timer = setInterval(() => {
        if (socket.writable) socket.write('a', () => (sent.bytes += 1));
      }, 200);
    });
    clearInterval(timer);
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(r.text).toMatch(/\r\nconnection: close\r\n/i);
    // Closed by the linger bound, not by the request deadline (20 s) nor by the client.
    expect(r.closedAfterMs).toBeGreaterThanOrEqual(LINGER_MS - 100);
    expect(r.closedAfterMs).toBeLessThan(LINGER_MS + 3000);
  }, 30_000);

  it('cuts off a body that floods on after the answer once LINGER_BYTES are read', async () => {
    const r = await sendOnAndOn(postHead(1 << 30), (socket, sent) => {
      const chunk = Buffer.alloc(64 * 1024, 'a');
      const pump = () => {
        while (socket.writable) {
          const more = socket.write(chunk);
          sent.bytes += chunk.length;
          if (!more) return void socket.once('drain', pump);
        }
      };
      pump();
    });
    expect(r.text).toMatch(/^HTTP\/1\.1 413 /);
    console.log(`flood after a 413: cut off after ${(r.sentBytes / 2 ** 20).toFixed(1)} MiB sent, ${r.closedAfterMs} ms`);
    // What the client got into the kernel: what the server read and dropped, plus socket buffers (a few MiB on loopback).
    expect(r.sentBytes).toBeGreaterThan(LINGER_BYTES);
    expect(r.sentBytes).toBeLessThan(LINGER_BYTES + 32 * 2 ** 20);
    expect(r.closedAfterMs).toBeLessThan(LINGER_MS);
  }, 30_000);

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

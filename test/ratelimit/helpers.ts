import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { ApiResponse, RequestOptions } from '../helpers/http.js';
import type { TestServer } from '../helpers/testServer.js';

export { sleep };

/** The shared Redis of the test run. */
export const REDIS_URL = process.env.TEST_REDIS_URL || 'redis://127.0.0.1:6379';

const prefixes: string[] = [];

/** A Redis key prefix of its own, since other test files share the same Redis. */
export function uniquePrefix(): string {
  const prefix = `test-${process.pid}-${Math.random().toString(36).slice(2)}:`;
  prefixes.push(prefix);
  return prefix;
}

/** Deletes the keys this test file left in the shared Redis (day counters would otherwise live 2 days). */
export async function cleanupSharedRedis(): Promise<void> {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    for (const prefix of prefixes.splice(0)) {
      const keys = await client.keys(`${prefix}*`);
      if (keys.length > 0) await client.del(...keys);
    }
  } finally {
    client.disconnect();
  }
}

/** The two stores every quota test runs against: the in-process default and Redis. */
export function storeEnvs(): Array<[string, () => Record<string, string>]> {
  return [
    ['in-process store', () => ({})],
    ['Redis store', () => ({ REDIS_URL, REDIS_PREFIX: uniquePrefix() })],
  ];
}

/**
 * Fixed windows are aligned to UTC minutes: when the current second is 40 or later,
 * sleeps into the next minute, so a test has at least 20 s before a boundary.
 */
export async function awayFromMinuteBoundary(): Promise<void> {
  const now = Date.now();
  const second = Math.floor(now / 1000) % 60;
  if (second < 40) return;
  const nextMinute = (Math.floor(now / 60_000) + 1) * 60_000;
  await sleep(nextMinute - now + 100);
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);
export const nextMinuteStart = (s = nowSeconds()) => (Math.floor(s / 60) + 1) * 60;
export const nextDayStart = (s = nowSeconds()) => (Math.floor(s / 86_400) + 1) * 86_400;

/** Sends `count` identical requests, `concurrency` at a time, and returns every response in order. */
export async function sendMany(
  server: TestServer,
  count: number,
  path: string,
  opts: RequestOptions = {},
  concurrency = 20,
): Promise<ApiResponse[]> {
  const out: ApiResponse[] = [];
  for (let i = 0; i < count; i += concurrency) {
    const n = Math.min(concurrency, count - i);
    out.push(...(await Promise.all(Array.from({ length: n }, () => server.request(path, opts)))));
  }
  return out;
}

export const statuses = (responses: ApiResponse[]) => responses.map((r) => r.status);

/** The rate-limit fields of a response, or null for each that is absent. */
export function rateLimitHeaders(res: { headers: Headers }) {
  const h = res.headers;
  return {
    limit: h.get('x-ratelimit-limit'),
    remaining: h.get('x-ratelimit-remaining'),
    reset: h.get('x-ratelimit-reset'),
    policy: h.get('ratelimit-policy'),
    rateLimit: h.get('ratelimit'),
  };
}

/** Parses `"minute";r=59;t=37, "day";r=999;t=51837`. */
export function parseRateLimit(value: string | null): Record<string, { r: number; t: number }> {
  const out: Record<string, { r: number; t: number }> = {};
  for (const part of (value ?? '').split(',')) {
    const m = /^\s*"(\w+)";r=(\d+);t=(\d+)\s*$/.exec(part);
    if (m) out[m[1]!] = { r: Number(m[2]), t: Number(m[3]) };
  }
  return out;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A throwaway redis-server of this test file, on `port`; resolves once it accepts connections. */
export async function startRedisServer(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
    if (await canConnect(port)) return child;
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}`);
}

/** SIGKILLs a redis-server started by startRedisServer and waits until it is gone. */
export async function killRedisServer(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** Polls `check` until it returns true or `timeoutMs` passes; returns whether it succeeded. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(intervalMs);
  }
}

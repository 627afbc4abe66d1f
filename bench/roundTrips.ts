/**
 * Round trips per request (issue 45): each measured server (service, ceiling, baseline build)
 * reaches Postgres through a proxy of its own (pgProxy.ts, built to dist/bench/ by targets.ts),
 * which counts its round trips and holds each back by `--round-trip-delay-ms`. Counted are those of the
 * connections a request runs on: not the service's background pools (pg-boss's polling and maintenance,
 * the webhook workers, the outbox's dispatcher), which every instance runs whatever the requests.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { projectRoot } from '../src/paths.js';
import { forget, remember } from '../test/helpers/cleanup.js';
import type { Arm, Measurement } from './load.js';

export interface Proxy {
  /** `databaseUrl` with its host and port the proxy's. */
  databaseUrl: string;
  /** Round trips since the last reset. */
  roundTrips(): Promise<number>;
  reset(): Promise<void>;
  /** Waits until no round trip has passed for a while (the requests of an arm that ended have finished). */
  quiet(): Promise<number>;
  stop(): Promise<void>;
}

let made = 0;

/** Starts a proxy to the server of `databaseUrl`, adding `delayMs` to each round trip. */
export async function startProxy(databaseUrl: string, delayMs: number): Promise<Proxy> {
  const upstream = new URL(databaseUrl);
  const child = spawn(process.execPath, [path.join(projectRoot, 'dist/bench/pgProxy.js'), `${upstream.hostname}:${upstream.port || 5432}`, String(delayMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const key = `pg proxy ${made++}`;
  const stop = async () => {
    forget(key);
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  };
  remember(key, `stop the round-trip proxy (pid ${child.pid})`, stop);
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the round-trip proxy (dist/bench/pgProxy.js) exited with ${code} before listening`)));
  });
  const { port, control } = JSON.parse(first) as { port: number; control: number };
  // The request pool's (and any client's but the service's background pools: test/helpers/pgProxy.ts).
  const stats = async (method = 'GET', at = '/stats') => ((await (await fetch(`http://127.0.0.1:${control}${at}`, { method })).json()) as { requestRoundTrips: number }).requestRoundTrips;
  const proxied = new URL(databaseUrl);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(port);
  return {
    databaseUrl: proxied.toString(),
    roundTrips: () => stats(),
    reset: async () => void (await stats('POST', '/reset')),
    quiet: async () => {
      // Quiet: no round trip in 100 ms (a request's next one follows within a few ms, delay included); at most 10 s.
      let last = await stats();
      for (let i = 0; i < 100; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const now = await stats();
        if (now === last) return now;
        last = now;
      }
      return last;
    },
    stop,
  };
}

/**
 * For pairedRounds' `around`: each measured run of an arm whose server has a proxy (`proxies`,
 * by arm) starts once the server is quiet, with the count at zero, and its round trips per request
 * are those counted until it is quiet again (the requests in flight when the load stopped have
 * finished), over the requests sent (those answered, and at most one in flight per connection).
 */
export function countRoundTrips(proxies: Map<string, Proxy>) {
  return async (arm: Arm, run: () => Promise<Measurement>): Promise<Measurement> => {
    const proxy = proxies.get(arm.name);
    if (!proxy) return run();
    await proxy.quiet();
    await proxy.reset();
    const m = await run();
    const roundTrips = await proxy.quiet();
    return { ...m, roundTrips: m.sent > 0 ? roundTrips / m.sent : NaN };
  };
}

/**
 * A PostgreSQL wire proxy in this process: it counts round trips, a client's Sync (the end of an
 * extended-protocol query) or simple Query message, and holds each back by a fixed delay, to stand
 * in for a database one network hop away (issue 45). The counting and the delay are those of the
 * project's ../shared/tools/pgproxy.mjs, kept here so that nothing outside the repository is needed.
 * A delay is a Node timer: 1 ms holds a round trip about 1–3 ms, more on a loaded machine.
 * bench/pgProxy.ts runs it as a process of its own for the benchmark.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface PgProxy {
  port: number;
  /**
   * `roundTrips`: all of them; `requestRoundTrips`: those of connections whose application_name is not a
   * background pool's (`animal-store-<name>`: pg-boss, the webhook workers and the outbox's dispatcher,
   * src/db/database.ts), so the service's request pool and any other client.
   */
  stats: { roundTrips: number; requestRoundTrips: number; connections: number };
  close(): Promise<void>;
}

/** The background pools' application_name (src/db/database.ts openPool, src/jobs/queue.ts). */
const BACKGROUND = /^animal-store-/;

/** SSLRequest and GSSENCRequest: startup-phase messages after which another startup message follows. */
const SSL = 80877103;
const GSS = 80877104;

/**
 * Reads a client's stream message by message; returns how many round-trip ends (Sync, Query) a chunk closes.
 * `onStartup` gets the startup message's parameters (application_name…).
 */
function clientParser(onStartup: (params: Map<string, string>) => void) {
  let startup = true;
  let header = Buffer.alloc(0);
  let skip = 0;
  /** The startup message's parameters as they arrive (its length is known from its header). */
  let params: Buffer | undefined;
  let paramsLength = 0;
  return (chunk: Buffer): number => {
    let ends = 0;
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        if (params) {
          params = Buffer.concat([params, chunk.subarray(i, i + n)]);
          if (params.length === paramsLength) {
            const parts = params.toString('utf8').split('\0');
            const named = new Map<string, string>();
            for (let k = 0; k + 1 < parts.length; k += 2) if (parts[k]) named.set(parts[k]!, parts[k + 1]!);
            onStartup(named);
            params = undefined;
          }
        }
        skip -= n;
        i += n;
        continue;
      }
      // A startup message has no type byte: its length, then its code.
      const need = startup ? 8 : 5;
      const take = Math.min(need - header.length, chunk.length - i);
      header = Buffer.concat([header, chunk.subarray(i, i + take)]);
      i += take;
      if (header.length < need) break;
      if (startup) {
        skip = header.readInt32BE(0) - 8;
        const code = header.readInt32BE(4);
        if (code !== SSL && code !== GSS) {
          startup = false;
          params = Buffer.alloc(0);
          paramsLength = skip;
        }
      } else {
        skip = header.readInt32BE(1) - 4;
        if (header[0] === 0x53 /* S */ || header[0] === 0x51 /* Q */) ends++;
      }
      header = Buffer.alloc(0);
    }
    return ends;
  };
}

/** Listens on 127.0.0.1 (an ephemeral port) and forwards to `upstream`, each round trip held back `delayMs`. */
export async function startPgProxy(upstream: { host: string; port: number }, delayMs: number): Promise<PgProxy> {
  const stats = { roundTrips: 0, requestRoundTrips: 0, connections: 0 };
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    stats.connections++;
    const server = net.connect(upstream.port, upstream.host);
    client.setNoDelay(true);
    server.setNoDelay(true);
    sockets.add(client).add(server);
    let background = false;
    const parse = clientParser((params) => (background = BACKGROUND.test(params.get('application_name') ?? '')));
    // In order: a chunk that ends a round trip waits the delay, and every chunk after it waits for it.
    let chain = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      const ends = parse(chunk);
      stats.roundTrips += ends;
      if (!background) stats.requestRoundTrips += ends;
      const wait = ends > 0 && delayMs > 0;
      chain = chain.then(() => (wait ? new Promise<void>((r) => setTimeout(r, delayMs)) : undefined)).then(() => void server.write(chunk));
    });
    server.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      server.destroy();
      sockets.delete(client);
      sockets.delete(server);
    };
    for (const socket of [client, server]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  const port = await new Promise<number>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve((proxy.address() as AddressInfo).port)));
  return {
    port,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}

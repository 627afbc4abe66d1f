/**
 * A PostgreSQL wire proxy between one measured server and Postgres, in a process of its own
 * (roundTrips.ts starts it): it counts round trips, a client's Sync (the end of an extended-protocol
 * query) or simple Query message, and holds each back by a fixed delay, to stand in for a database
 * one network hop away (issue 45). The counting and the delay are those of the project's
 * ../shared/tools/pgproxy.mjs, kept here so that the benchmark needs nothing outside the repository.
 * A delay is a Node timer: 1 ms holds a round trip about 1–3 ms, more on a loaded machine; compare
 * arms of one run. Argument: the upstream `host:port`, then the delay in ms. It prints
 * `{"port","control"}` once listening; control (HTTP): GET /stats → {"roundTrips","connections"}, POST /reset.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

const [upstream = '127.0.0.1:5432', delayArg = '0'] = process.argv.slice(2);
const [upHost, upPort] = upstream.split(':');
const delayMs = Number(delayArg);
const stats = { roundTrips: 0, connections: 0 };
/** SSLRequest and GSSENCRequest: startup-phase messages after which another startup message follows. */
const SSL = 80877103;
const GSS = 80877104;

/** Reads a client's stream message by message; returns how many round-trip ends (Sync, Query) a chunk closes. */
function clientParser() {
  let startup = true;
  let header = Buffer.alloc(0);
  let skip = 0;
  return (chunk: Buffer): number => {
    let ends = 0;
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
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
        if (code !== SSL && code !== GSS) startup = false;
      } else {
        skip = header.readInt32BE(1) - 4;
        if (header[0] === 0x53 /* S */ || header[0] === 0x51 /* Q */) ends++;
      }
      header = Buffer.alloc(0);
    }
    return ends;
  };
}

const proxy = net.createServer((client) => {
  stats.connections++;
  const server = net.connect(Number(upPort), upHost);
  client.setNoDelay(true);
  server.setNoDelay(true);
  const parse = clientParser();
  // In order: a chunk that ends a round trip waits the delay, and every chunk after it waits for it.
  let chain = Promise.resolve();
  client.on('data', (chunk: Buffer) => {
    const ends = parse(chunk);
    stats.roundTrips += ends;
    const wait = ends > 0 && delayMs > 0;
    chain = chain.then(() => (wait ? new Promise<void>((r) => setTimeout(r, delayMs)) : undefined)).then(() => void server.write(chunk));
  });
  server.on('data', (chunk: Buffer) => client.write(chunk));
  const end = () => {
    client.destroy();
    server.destroy();
  };
  for (const socket of [client, server]) {
    socket.on('error', end);
    socket.on('close', end);
  }
});

const control = http.createServer((req, res) => {
  if (req.url === '/reset' && req.method === 'POST') stats.roundTrips = 0;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(stats));
});

const listening = (s: net.Server) => new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));
process.stdout.write(`${JSON.stringify({ port: await listening(proxy), control: await listening(control) })}\n`);
process.on('SIGTERM', () => process.exit(0));

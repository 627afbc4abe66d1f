/**
 * The round-trip proxy (test/helpers/pgProxy.ts) as a process of its own, between one measured
 * server and Postgres (roundTrips.ts starts it). Argument: the upstream `host:port`, then the delay
 * in ms. It prints `{"port","control"}` once listening; control (HTTP): GET /stats →
 * {"roundTrips","requestRoundTrips","connections"}, POST /reset.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPgProxy } from '../test/helpers/pgProxy.js';

const [upstream = '127.0.0.1:5432', delayArg = '0'] = process.argv.slice(2);
const [host = '127.0.0.1', port = '5432'] = upstream.split(':');
const proxy = await startPgProxy({ host, port: Number(port) }, Number(delayArg));

const control = http.createServer((req, res) => {
  if (req.url === '/reset' && req.method === 'POST') proxy.stats.roundTrips = proxy.stats.requestRoundTrips = 0;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(proxy.stats));
});
const controlPort = await new Promise<number>((resolve) => control.listen(0, '127.0.0.1', () => resolve((control.address() as AddressInfo).port)));
process.stdout.write(`${JSON.stringify({ port: proxy.port, control: controlPort })}\n`);
process.on('SIGTERM', () => process.exit(0));

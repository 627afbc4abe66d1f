/**
 * `npx tsx bench/overLimitBodies.ts [--clients 64] [--mib 8]`: what keyed uploads over the body
 * limit cost the server, with real sockets. A server of this checkout on a database of its own;
 * `--clients` raw connections at once each send `POST /v1/pets` with a valid key and a body of
 * `--mib` MiB as fast as the server takes it, while another client sends listPets one after
 * another. Prints the server's CPU (user + system) over the burst, the listPets client's worst
 * and median latency (and without the burst, for reference), the answers, and what the uploaders
 * got into the server (the bytes it read, plus socket buffers), and what the server read. Needs Postgres
 * (TEST_POSTGRES_URL, else DATABASE_URL, else 127.0.0.1:5432); its database is dropped at the end.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { unlimitedKey } from '../test/helpers/apiKeys.js';
import { runCommand } from '../test/helpers/cleanup.js';
import { createDatabase, dropDatabase } from '../test/helpers/databases.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { runScript, startServer } from '../test/helpers/processes.js';

const { values } = parseArgs({
  options: { clients: { type: 'string', default: '64' }, mib: { type: 'string', default: '8' }, 'upload-to': { type: 'string' }, key: { type: 'string' } },
});
const clients = Number(values.clients);
const bodyBytes = Number(values.mib) * 2 ** 20;
const adminUrl = process.env.TEST_POSTGRES_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, in ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Bytes a process has read so far, files and sockets (/proc/<pid>/io, rchar). */
function readBytes(pid: number): number {
  return Number(/rchar: (\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

/** One upload: the status line it got, how many bytes it got into the kernel, when its answer came and when it was closed. */
function upload(port: number, key: string): Promise<Upload> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let sent = 0;
    let text = '';
    let answeredMs = NaN;
    socket.on('data', (data) => {
      if (!text) answeredMs = performance.now() - started;
      text += data;
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve({ status: text.split('\r\n')[0] || 'no answer', sent, answeredMs, closedMs: performance.now() - started }));
    socket.once('connect', () => {
      socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`);
      const pump = () => {
        while (socket.writable && sent < bodyBytes) {
          const more = socket.write(chunk);
          sent += chunk.length;
          if (!more) return void socket.once('drain', pump);
        }
        // All sent: wait for the answer, then close (as a client does when it has its answer).
        if (sent >= bodyBytes) socket.end();
      };
      pump();
    });
  });
}

/** listPets one after another on one keep-alive connection until `until` settles: each latency in ms. */
async function listPetsWhile(port: number, key: string, until: Promise<unknown>): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let done = false;
  void until.finally(() => (done = true));
  const latencies: number[] = [];
  while (!done) {
    const started = performance.now();
    await new Promise<void>((resolve, reject) => {
      http
        .get({ port, host: '127.0.0.1', path: '/v1/pets?limit=20', agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`listPets answered ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
    latencies.push(performance.now() - started);
  }
  agent.destroy();
  return latencies;
}

const summary = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return `${sorted.length} requests, median ${sorted[sorted.length >> 1]!.toFixed(1)} ms, worst ${sorted.at(-1)!.toFixed(1)} ms`;
};

interface Upload {
  status: string;
  sent: number;
  answeredMs: number;
  closedMs: number;
}

/**
 * The uploads, from a process of their own: pumping megabytes into sockets keeps an event loop
 * busy, and in this one it would delay the listPets client it measures.
 */
function burst(port: number, key: string): Promise<Upload[]> {
  const args = ['--import', 'tsx', fileURLToPath(import.meta.url), '--upload-to', String(port), '--key', key, '--clients', String(clients), '--mib', String(values.mib)];
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { maxBuffer: 1 << 24 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout) as Upload[]))),
  );
}

if (values['upload-to'] !== undefined) {
  const port = Number(values['upload-to']);
  const uploads = await Promise.all(Array.from({ length: clients }, () => upload(port, values.key!)));
  process.stdout.write(JSON.stringify(uploads));
  process.exit(0);
}

await runCommand(async () => {
  const name = `as_overlimit_${process.pid}`;
  const env = { DATABASE_URL: await createDatabase(adminUrl, name) };
  try {
    const migrated = await runScript('scripts/migrate.ts', [], env);
    if (migrated.code !== 0) throw new Error(`migrate: ${migrated.stderr}`);
    const key = await unlimitedKey(env);
    const server = await startServer('src/server.ts', { ...env, LOG_LEVEL: 'warn', WEBHOOK_CONCURRENCY: '0' }, { stdout: 'ignore' });
    try {
      const port = Number(new URL(server.baseUrl).port);
      const pid = server.child.pid!;
      // Warm up (key cache, JIT), then the reference: listPets for 2 s alone.
      await listPetsWhile(port, key, new Promise((r) => setTimeout(r, 1000)));
      const alone = await listPetsWhile(port, key, new Promise((r) => setTimeout(r, 2000)));
      // The burst alone, for its CPU; then again while listPets runs, for its latency.
      const cpuBefore = cpuMs(pid);
      const readBefore = readBytes(pid);
      await burst(port, key);
      const cpu = cpuMs(pid) - cpuBefore;
      const read = readBytes(pid) - readBefore;
      const started = performance.now();
      const measured = burst(port, key);
      const during = await listPetsWhile(port, key, measured);
      const uploads = await measured;
      const mib = (n: number) => (n / 2 ** 20).toFixed(2);
      const statuses: Record<string, number> = {};
      for (const u of uploads) statuses[u.status] = (statuses[u.status] ?? 0) + 1;
      const sent = uploads.map((u) => u.sent).sort((a, b) => a - b);
      const answered = uploads.map((u) => u.answeredMs).sort((a, b) => a - b);
      console.log(`${clients} uploads of ${values.mib} MiB, over in ${(performance.now() - started).toFixed(0)} ms`);
      console.log(`server CPU during the burst alone: ${cpu} ms`);
      console.log(`server read during the burst alone: ${mib(read)} MiB (${mib(read / clients)} MiB per upload)`);
      console.log(`answers: ${JSON.stringify(statuses)}`);
      console.log(`answered after: median ${answered[answered.length >> 1]!.toFixed(0)} ms, last ${answered.at(-1)!.toFixed(0)} ms`);
      console.log(`bytes sent per upload (read by the server + kernel buffers): min ${mib(sent[0]!)} MiB, median ${mib(sent[sent.length >> 1]!)} MiB, max ${mib(sent.at(-1)!)} MiB`);
      console.log(`listPets alone:        ${summary(alone)}`);
      console.log(`listPets during burst: ${summary(during)}`);
    } finally {
      await server.stop();
    }
  } finally {
    await dropDatabase(adminUrl, name);
  }
});

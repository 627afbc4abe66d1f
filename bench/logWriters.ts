/**
 * npm run bench:logs [-- --lines 100000 --rounds 5]: what one request line costs through each
 * way pino can write it: the service's batching writer (src/logging/batchedLines.ts) over
 * pino's asynchronous destination, pino's destination (sonic-boom) with and without
 * `minLength`, and a pino transport (a worker thread). CPU of the whole process (every thread,
 * as the benchmark counts a server's) per line, medians of paired rounds; the lines go to a file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type DestinationStream } from 'pino';
import { batchedLines } from '../src/logging/batchedLines.js';
import { remember, undoAllOnSignals } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { median } from './stats.js';

const { values } = parseCommandLine(
  'Usage: npm run bench:logs [-- --lines <n> --rounds <n>]\n\nMeasures the CPU cost per request log line of each log writer (100,000 lines, 5 rounds by default).',
  { options: { lines: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '5' } } },
);
const lines = Number(values.lines);
const rounds = Number(values.rounds);
const dir = mkdtempSync(path.join(tmpdir(), 'as-logs-'));
// Ctrl-C removes it too (lib/cleanup.ts).
remember('folder logs', `remove ${dir}`, async () => rmSync(dir, { recursive: true, force: true }));
undoAllOnSignals();

/** A way to write lines: a stream for pino, and how to wait until everything is written. */
interface Writer {
  stream: DestinationStream;
  finish(): Promise<void>;
}

const flushed = (stream: { flush(cb: (err?: Error) => void): void }) => new Promise<void>((resolve, reject) => stream.flush((err) => (err ? reject(err) : resolve())));

const writers: Record<string, (file: string) => Writer> = {
  'batchedLines (64 KiB) over pino.destination': (file) => {
    const sink = pino.destination({ dest: file, sync: false });
    const stream = batchedLines(sink, { bytes: 65_536, flushMs: 250 });
    return { stream, finish: () => flushed(stream as Parameters<typeof flushed>[0]) };
  },
  'pino.destination, minLength 8 KiB': (file) => {
    const stream = pino.destination({ dest: file, sync: false, minLength: 8192 }); // below its maxWrite (16 KiB)
    return { stream, finish: () => flushed(stream) };
  },
  'pino.destination, minLength 4 KiB': (file) => {
    const stream = pino.destination({ dest: file, sync: false, minLength: 4096 });
    return { stream, finish: () => flushed(stream) };
  },
  'pino.destination, no minLength': (file) => {
    const stream = pino.destination({ dest: file, sync: false });
    return { stream, finish: () => flushed(stream) };
  },
  'pino.transport (pino/file, worker thread)': (file) => {
    const stream = pino.transport({ target: 'pino/file', options: { destination: file } });
    return { stream, finish: async () => (await flushed(stream as unknown as Parameters<typeof flushed>[0]), stream.end()) };
  },
};

/** CPU µs of the whole process per line: log `lines` request lines, then wait until they are written. */
async function measure(make: (file: string) => Writer, round: number): Promise<number> {
  const file = path.join(dir, `round-${round}.log`);
  const writer = make(file);
  const log = pino({ level: 'info' }, writer.stream);
  const before = process.cpuUsage();
  for (let i = 0; i < lines; i++) {
    log.info(
      { reqId: `5f0c1f2e-2a1b-4c3d-9e8f-${String(i).padStart(12, '0')}`, op: 'listPets', method: 'GET', url: '/v1/pets?limit=20', status: 200, ms: 1.23, ip: '127.0.0.1', keyId: 1, plan: 'business', rateLimit: 'allowed' },
      'request',
    );
    // Let I/O callbacks run between lines, as between requests of a server.
    if (i % 32 === 31) await new Promise((resolve) => setImmediate(resolve));
  }
  await writer.finish();
  const used = process.cpuUsage(before);
  rmSync(file, { force: true });
  return (used.user + used.system) / lines;
}

const names = Object.keys(writers);
const results = new Map(names.map((n) => [n, [] as number[]]));
await measure(writers[names[0]!]!, -1); // warm-up
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 === 0 ? names : [...names].reverse()) {
    const us = await measure(writers[name]!, r);
    results.get(name)!.push(us);
    process.stderr.write(`  round ${r + 1} ${name.padEnd(46)} ${us.toFixed(2)} µs/line\n`);
  }
}
rmSync(dir, { recursive: true, force: true });
process.stdout.write(`\n${lines} request lines per round, ${rounds} rounds: CPU µs per line (median, range)\n`);
for (const [name, us] of results) {
  process.stdout.write(`${name.padEnd(46)} ${median(us).toFixed(2).padStart(6)}  (${Math.min(...us).toFixed(2)}–${Math.max(...us).toFixed(2)})\n`);
}

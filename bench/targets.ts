import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { projectRoot } from '../src/paths.js';
import { startServer } from '../test/helpers/processes.js';

/** A server under test, in a process of its own so that its CPU and memory are its own. */
export interface Target {
  name: string;
  baseUrl: string;
  /** Its metrics listener's /metrics. */
  metricsUrl: string;
  pid: number;
  /** When its process was spawned (Date.now()): a profile of it starts there. */
  spawnedAt: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): number;
  /** Bytes the process has allocated on its JS heap so far (bench/allocationMeter.mjs). */
  allocatedBytes(): Promise<number>;
  stop(): Promise<void>;
}

let built = false;
let meters = 0;
/**
 * The compiled form of a TypeScript entry of this repo, built once per run: servers are measured as
 * `npm start` runs them (node dist/…), not through tsx, whose transform adds work to every closure.
 */
function compiled(entry: string): string {
  if (entry.endsWith('.js')) return entry; // already compiled (a snapshot of dist/, say)
  if (!built) {
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: projectRoot, stdio: 'inherit' });
    built = true;
  }
  return `dist/${entry.replace(/\.ts$/, '.js')}`;
}

/** Starts `entry` (a TypeScript file of this repo, run compiled) in production mode with `env` and waits until `readyPath` answers. */
export async function startTarget(name: string, entry: string, env: Record<string, string>, readyPath: string, nodeArgs: string[] = []): Promise<Target> {
  // stdout ignored: at the default log level the service logs every request.
  const file = compiled(entry);
  const spawnedAt = Date.now();
  const meterFile = path.join(tmpdir(), `as-allocations-${process.pid}-${meters++}`);
  const meter = ['--import', path.join(projectRoot, 'bench', 'allocationMeter.mjs')];
  const server = await startServer(file, { NODE_ENV: 'production', ALLOCATION_METER_FILE: meterFile, ...env }, { readyPath, stdout: 'ignore', nodeArgs: [...meter, ...nodeArgs] });
  const pid = server.child.pid!;
  return {
    name,
    baseUrl: server.baseUrl,
    metricsUrl: server.metricsUrl,
    pid,
    spawnedAt,
    peakRssMiB: () => peakRss(pid),
    allocatedBytes: () => readMeter(pid, meterFile),
    stop: async () => {
      await server.stop();
      rmSync(meterFile, { force: true });
    },
  };
}

/** The peak RSS of a process plus those of its children (a cluster's workers), in MiB. */
function peakRss(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return kib / 1024 + children.reduce((sum, child) => sum + peakRss(child), 0);
}

/** Asks a server's allocation meter for its count (SIGUSR2) and waits for the answer. */
async function readMeter(pid: number, file: string): Promise<number> {
  const sequence = () => {
    try {
      return readFileSync(file, 'utf8').split(' ').map(Number) as [number, number];
    } catch {
      return [0, NaN] as [number, number];
    }
  };
  const [before] = sequence();
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 200; i++) {
    const [seq, bytes] = sequence();
    if (seq > before) return bytes;
    await sleep(5);
  }
  throw new Error(`process ${pid} did not report its allocations`);
}

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { projectRoot } from '../../src/paths.js';
import { startServer } from '../lib/processes.js';

/** A server under test, in a process of its own so that its CPU and memory are its own. */
export interface Target {
  name: string;
  baseUrl: string;
  pid: number;
  /** When its process was spawned (Date.now()): a profile of it starts there. */
  spawnedAt: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

let built = false;
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
  const server = await startServer(file, { NODE_ENV: 'production', ...env }, { readyPath, stdout: 'ignore', nodeArgs });
  const pid = server.child.pid!;
  return {
    name,
    baseUrl: server.baseUrl,
    pid,
    spawnedAt,
    peakRssMiB: () => peakRss(pid),
    stop: async () => {
      await server.stop();
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

import { readFileSync } from 'node:fs';
import { startServer } from '../lib/processes.js';

/** A server under test, in a process of its own so that its CPU and memory are its own. */
export interface Target {
  name: string;
  baseUrl: string;
  pid: number;
  /** Peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): number;
  stop(): Promise<void>;
}

/** Starts `entry` (a TypeScript file of this repo) in production mode with `env` and waits until `readyPath` answers. */
export async function startTarget(name: string, entry: string, env: Record<string, string>, readyPath: string, nodeArgs: string[] = []): Promise<Target> {
  // stdout ignored: at the default log level the service logs every request.
  const server = await startServer(entry, { NODE_ENV: 'production', ...env }, { readyPath, stdout: 'ignore', nodeArgs });
  const pid = server.child.pid!;
  return {
    name,
    baseUrl: server.baseUrl,
    pid,
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

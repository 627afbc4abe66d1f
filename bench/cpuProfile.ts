/** Reads a V8 .cpuprofile (node --cpu-prof) into self-time tables: by function and by package. */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Cost {
  name: string;
  /** Share of the busy (non-idle) samples, 0..1. */
  share: number;
  ms: number;
}

export interface ProfileSummary {
  busyMs: number;
  idleShare: number;
  functions: Cost[];
  packages: Cost[];
}

/** Where a frame's code lives: a package, Node's own internals, this repo's file, or a V8 pseudo-frame. */
function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const own = /\/(src|scripts)\/(.+)$/.exec(url);
  return own ? `${own[1]}/${own[2]}` : url;
}

function frameName(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  if (!url) return functionName || '(anonymous)';
  const file = url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|scripts)\//, '$1/');
  return `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}

/**
 * Self time by function and by package, as shares of the time the process was not idle.
 * `skipMs`: samples of the first milliseconds of the profile (start-up, warm-up) are left out.
 */
export function summarizeProfile(file: string, top = 10, skipMs = 0): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<number, number>();
  let elapsedMs = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    elapsedMs += ms;
    if (elapsedMs >= skipMs) selfMs.set(id, (selfMs.get(id) ?? 0) + ms);
  });

  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let idle = 0;
  let total = 0;
  for (const [id, ms] of selfMs) {
    const node = byId.get(id)!;
    total += ms;
    if (node.callFrame.functionName === '(idle)') {
      idle += ms;
      continue;
    }
    const fn = frameName(node);
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
    const pkg = packageOf(node.callFrame.url, node.callFrame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + ms);
  }
  const busy = total - idle;
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms, share: ms / busy }));
  return { busyMs: busy, idleShare: total ? idle / total : 0, functions: rank(functions), packages: rank(packages) };
}

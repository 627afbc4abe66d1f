/**
 * Where the service's CPU per request goes, against the ceiling's, by cost: from two CPU
 * profiles (`node --cpu-prof`) of the same load. Each sample is charged to the innermost frame
 * of its stack that belongs to a cost below (a query sent from a handler is the database
 * client's, the JSON.stringify inside Fastify's serializer is serialization), else to "the
 * rest". Self time of V8's pseudo-frames (GC) is its own cost.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { measure, type Arm, type Measurement } from './load.js';
import { startTarget } from './targets.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

type Frame = ProfileNode['callFrame'];

/** The costs, in the order they are reported; the first rule a frame matches names its cost. */
const COSTS: Array<[string, (f: Frame) => boolean]> = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['request line (log)', (f) => /\/src\/logging\/|\/node_modules\/(pino|sonic-boom|on-exit-leak-free)\//.test(f.url)],
  ['metrics and query timing', (f) => /\/src\/metrics\/|\/src\/db\/statements\.|\/src\/http\/responseObservers\.|\/node_modules\/prom-client\//.test(f.url)],
  ['authentication and rate limit', (f) => /\/src\/(auth|ratelimit)\/|\/src\/api\/gate\./.test(f.url)],
  ['validation (ajv)', (f) => /\/node_modules\/fastify\/lib\/validation\.js|\/src\/api\/validation\.|\/node_modules\/ajv/.test(f.url)],
  ['response serialization', (f) => /\/node_modules\/fastify\/lib\/reply\.js/.test(f.url) && /^serialize/.test(f.functionName)],
  ['response headers', (f) => /^node:_http_(outgoing|common)$/.test(f.url) || (/\/node_modules\/fastify\/lib\/reply\.js/.test(f.url) && /^Reply\.header/.test(f.functionName))],
  ['Fastify hooks and routing', (f) => /\/node_modules\/(fastify\/lib\/(hooks|route|handle-request|wrap-thenable)\.js|find-my-way|fast-querystring)/.test(f.url)],
  ['database client (pg)', (f) => /\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|buffer-writer)\//.test(f.url)],
  ['socket writes (writev)', (f) => f.functionName === 'writev' || f.functionName === 'writevGeneric'],
];
export const REST = 'the rest (HTTP parsing, event loop, handlers, …)';

/** µs per request of each cost in one profile; samples before `skipMs` (start-up, warm-up) are left out. */
export function costsPerRequest(file: string, requests: number, skipMs: number): Map<string, number> {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const costOf = new Map<number, string | null>();
  const classify = (id: number): string | null => {
    if (costOf.has(id)) return costOf.get(id)!;
    const node = byId.get(id)!;
    const own = COSTS.find(([, rule]) => rule(node.callFrame))?.[0];
    const up = parent.get(id);
    const cost = own ?? (up === undefined ? null : classify(up));
    costOf.set(id, cost);
    return cost;
  };
  const micros = new Map<string, number>([...COSTS.map(([name]) => [name, 0] as [string, number]), [REST, 0]]);
  let elapsedMs = 0;
  profile.samples.forEach((id, i) => {
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    elapsedMs += ms;
    if (elapsedMs < skipMs) return;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(program)') return;
    const cost = classify(id) ?? REST;
    micros.set(cost, micros.get(cost)! + (ms * 1000) / requests);
  });
  return micros;
}

export interface DecompositionRow {
  cost: string;
  service: number;
  ceiling: number;
}

export function decompose(service: Map<string, number>, ceiling: Map<string, number>): DecompositionRow[] {
  return [...service.keys()].map((cost) => ({ cost, service: service.get(cost)!, ceiling: ceiling.get(cost) ?? 0 }));
}

/**
 * Runs `entry` under `node --cpu-prof` at `connections` for `seconds` of `arm` (after a warm-up)
 * and returns its costs per request.
 */
export async function profiledCosts(
  target: { name: string; entry: string; env: Record<string, string>; readyPath: string },
  arm: (baseUrl: string) => Arm,
  { connections, seconds }: { connections: number; seconds: number },
): Promise<{ costs: Map<string, number>; rps: number }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'as-profile-'));
  try {
    const t = await startTarget(target.name, target.entry, target.env, target.readyPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    let m: Measurement;
    let measuredFrom: number;
    try {
      await measure(arm(t.baseUrl), { seconds: 2, connections });
      measuredFrom = Date.now() - t.spawnedAt;
      m = await measure(arm(t.baseUrl), { seconds, connections });
    } finally {
      await t.stop();
    }
    if (m.invalid) throw new Error(`${target.name}: ${m.invalid}`);
    const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`${target.name}: no profile written`);
    return { costs: costsPerRequest(path.join(dir, file), m.requests, measuredFrom), rps: m.rps };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

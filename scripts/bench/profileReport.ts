/** The profile section of BENCHMARKS.md: top self-time costs before and after, from bench/profiles/*.json. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/paths.js';

interface ProfileResult {
  arm: string;
  connections: number;
  rps: number;
  microsPerRequest: number;
  functions: Array<{ name: string; share: number; microsPerRequest: number }>;
  packages: Array<{ name: string; share: number; microsPerRequest: number }>;
  commit?: string;
  date: string;
}

const dir = path.join(projectRoot, 'bench', 'profiles');
const read = (name: string): ProfileResult | undefined => {
  const file = path.join(dir, name);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ProfileResult) : undefined;
};

const cell = (p: ProfileResult | undefined, i: number) => {
  const f = p?.functions[i];
  return f ? `${f.name.replace(/\|/g, '\\|')}: ${f.microsPerRequest.toFixed(1)} µs (${(f.share * 100).toFixed(0)} %)` : '—';
};

/**
 * Where the service spends more than its ceiling: per package (self time), the service's and
 * bare Fastify's µs per request from `service-<arm>-c<n>.json` and `ceiling-<arm>-c<n>.json`,
 * largest difference first.
 */
function renderAgainstCeiling(): string {
  const out: string[] = [];
  for (const [arm, connections] of [['get', 10], ['list20', 32]] as const) {
    const service = read(`service-${arm}-c${connections}.json`);
    const ceiling = read(`ceiling-${arm}-c${connections}.json`);
    if (!service || !ceiling) continue;
    const theirs = new Map(ceiling.packages.map((p) => [p.name, p.microsPerRequest]));
    const rows = service.packages
      .map((p) => ({ name: p.name, service: p.microsPerRequest, ceiling: theirs.get(p.name) ?? 0 }))
      .sort((a, b) => b.service - b.ceiling - (a.service - a.ceiling))
      .slice(0, 14);
    out.push(`### ${service.arm} at ${connections} connections: the service against its ceiling`);
    out.push('');
    out.push(
      `Busy CPU per request: service ${service.microsPerRequest.toFixed(0)} µs (${service.rps.toFixed(0)} req/s), bare Fastify ${ceiling.microsPerRequest.toFixed(0)} µs (${ceiling.rps.toFixed(0)} req/s), each profiled alone (${service.commit ?? 'this commit'}, ${service.date.slice(0, 10)}). Self time by package, largest difference first:`,
    );
    out.push('');
    out.push('| package | service µs/request | bare Fastify µs/request | difference |');
    out.push('|---|---:|---:|---:|');
    for (const r of rows) out.push(`| ${r.name} | ${r.service.toFixed(1)} | ${r.ceiling.toFixed(1)} | ${(r.service - r.ceiling).toFixed(1)} |`);
    out.push('');
  }
  return out.join('\n');
}

/** Markdown for every concurrency that has a before and an after profile of listPets, then the comparisons with the ceiling. */
export function renderProfiles(): string {
  const out: string[] = [];
  for (const connections of [10, 32, 64]) {
    const before = read(`before-list20-c${connections}.json`);
    const after = read(`after-list20-c${connections}.json`);
    if (!before || !after) continue;
    out.push(`### listPets limit=20 at ${connections} connections`);
    out.push('');
    out.push(
      `Busy CPU of the service process per request: ${before.microsPerRequest.toFixed(0)} µs before (${before.commit ?? 'earlier commit'}, ${before.date.slice(0, 10)}), ${after.microsPerRequest.toFixed(0)} µs after (${after.commit ?? 'this commit'}, ${after.date.slice(0, 10)}).`,
    );
    out.push('');
    out.push('| rank | before: function, self time per request (share of busy) | after |');
    out.push('|---:|---|---|');
    for (let i = 0; i < 5; i++) out.push(`| ${i + 1} | ${cell(before, i)} | ${cell(after, i)} |`);
    out.push('');
  }
  out.push(renderAgainstCeiling());
  return out.join('\n');
}

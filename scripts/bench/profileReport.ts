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

/** Markdown for every concurrency that has a before and an after profile of listPets. */
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
  return out.join('\n');
}

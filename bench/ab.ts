/**
 * npm run bench:ab: a quick paired A/B of the service against the ceiling and against variants
 * of itself (USAGE below). For judging one change in minutes; `npm run bench` is the record.
 */
import { cp, mkdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { createPostgresDatabase } from './data.js';
import { rounds, type Arm } from './load.js';
import { median } from './stats.js';
import { startTarget, type Target } from './targets.js';

const USAGE = `Usage: npm run bench:ab -- [--arm list20|get|create] [--connections 32] [--rounds 6] [--seconds 4]
                        [--variant 'name:ENV=value,ENV=value']... [--snapshot name] [--from name]...

A quick A/B of the service against the ceiling (bare Fastify, same SQL) and against variants
of itself, in paired rounds (A B C, then C B A): req/s and the server's own CPU per request,
medians with ranges.
  --variant   the service with these settings, as another arm (repeatable)
  --snapshot  keep the current build (dist/) in test-artifacts/ab/<name>
  --from      add a build kept with --snapshot as an arm (repeatable)
Needs Postgres (BENCH_DATABASE_URL, else 127.0.0.1:5432); its database and servers are
removed at the end, on failure and on Ctrl-C.`;

const { values } = parseCommandLine(USAGE, {
  options: {
    arm: { type: 'string', default: 'list20' },
    connections: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '4' },
    variant: { type: 'string', multiple: true, default: [] },
    snapshot: { type: 'string' },
    from: { type: 'string', multiple: true, default: [] },
  },
});
const abDir = path.join(projectRoot, 'test-artifacts', 'ab');
const log = (msg: string) => process.stderr.write(`${msg}\n`);

/** A copy of dist/ that runs on its own: the files the server reads from the repository are linked in. */
async function snapshot(name: string) {
  const dir = path.join(abDir, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(path.join(dir, 'src', 'db'), { recursive: true });
  await cp(path.join(projectRoot, 'dist'), path.join(dir, 'dist'), { recursive: true });
  await symlink(path.join(projectRoot, 'openapi.yaml'), path.join(dir, 'openapi.yaml'));
  await symlink(path.join(projectRoot, 'node_modules'), path.join(dir, 'node_modules'));
  await symlink(path.join(projectRoot, 'src', 'db', 'migrations'), path.join(dir, 'src', 'db', 'migrations'));
}

// The database and the servers are undone at the end, on failure and on Ctrl-C (lib/cleanup.ts).
await runCommand(async () => {
  const db = await createPostgresDatabase(process.env.BENCH_DATABASE_URL ?? LOCAL_POSTGRES_URL, `as_ab_${process.pid}`, 10_000);
  const targets: Target[] = [];
  const env = { ...db.env, RATE_LIMIT_ANONYMOUS: '100000000/1000000000' };
  const ceiling = await startTarget('ceiling', 'bench/baselineServer.ts', db.env, '/pets/1');
  targets.push(ceiling, await startTarget('service', 'src/server.ts', env, '/readyz'));
  if (values.snapshot) await snapshot(values.snapshot);
  for (const name of values.from!) {
    targets.push(await startTarget(name, path.join(abDir, name, 'dist', 'src', 'server.js'), env, '/readyz'));
  }
  for (const spec of values.variant!) {
    const [name, settings = ''] = spec.split(/:(.*)/s);
    const extra = Object.fromEntries(settings.split(',').filter(Boolean).map((pair) => pair.split(/=(.*)/s).slice(0, 2)));
    targets.push(await startTarget(name!, 'src/server.ts', { ...env, ...extra }, '/readyz'));
  }
  const auth = { authorization: `Bearer ${db.key}` };
  const armOf = (t: Target): Arm => {
    const api = t === ceiling ? t.baseUrl : `${t.baseUrl}/v1`;
    const headers = t === ceiling ? {} : auth;
    const json = { 'content-type': 'application/json' };
    const byName: Record<string, Arm> = {
      list20: { name: t.name, url: `${api}/pets?limit=20`, headers, pid: t.pid, allocatedBytes: t.allocatedBytes },
      get: { name: t.name, url: `${api}/pets/1`, headers, pid: t.pid, allocatedBytes: t.allocatedBytes },
      create: { name: t.name, url: `${api}/pets`, method: 'POST', headers: { ...headers, ...json }, body: JSON.stringify({ name: 'Bench', categoryId: 1 }), expect: 201, pid: t.pid, allocatedBytes: t.allocatedBytes },
    };
    return byName[values.arm!]!;
  };
  const arms = targets.map(armOf);
  const connections = Number(values.connections);
  const results = await rounds(arms, Number(values.rounds), {
    seconds: Number(values.seconds),
    connections,
    warmupSeconds: 2,
    pairs: true,
    onMeasured: (r, arm, m) => {
      if (m.invalid) throw new Error(`${arm.name}: ${m.invalid}`);
      log(`  ${r + 1} ${arm.name.padEnd(24)} ${m.rps.toFixed(0).padStart(6)} req/s  ${m.cpuMicros!.toFixed(0)} µs CPU/request  ${(m.allocBytes! / 1024).toFixed(1)} KB/request`);
    },
  });
  const base = results.get('ceiling')!;
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
  log(`\n${values.arm} at ${connections} connections, ${values.rounds} paired rounds:`);
  for (const [name, ms] of results) {
    const ratios = ms.map((m, i) => m.rps / base[i]!.rps);
    const cpuRatios = ms.map((m, i) => m.cpuMicros! / base[i]!.cpuMicros!);
    const allocRatios = ms.map((m, i) => m.allocBytes! / base[i]!.allocBytes!);
    log(
      `${name.padEnd(24)} ${median(ms.map((m) => m.rps)).toFixed(0).padStart(6)} req/s ×${median(ratios).toFixed(2)} (${range(ratios)})  ` +
        `${median(ms.map((m) => m.cpuMicros!)).toFixed(0).padStart(4)} µs CPU ×${median(cpuRatios).toFixed(2)} (${range(cpuRatios)})  ` +
        `${(median(ms.map((m) => m.allocBytes!)) / 1024).toFixed(1)} KB ×${median(allocRatios).toFixed(2)} (${range(allocRatios)})`,
    );
  }
});

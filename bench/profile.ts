/**
 * npm run bench:profile: the service (or the bench's ceiling) under `node --cpu-prof` at a fixed
 * load, and where its CPU time goes (USAGE below).
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../src/paths.js';
import { runCommand } from '../test/helpers/cleanup.js';
import { parseCommandLine } from '../scripts/lib/cli.js';
import { LOCAL_POSTGRES_URL } from '../test/helpers/probes.js';
import { summarizeProfile, type Cost } from './cpuProfile.js';
import { createPostgresDatabase } from './data.js';
import { measure, type Arm } from './load.js';
import { startTarget } from './targets.js';

const USAGE = `Usage: npm run bench:profile -- [--connections 32] [--seconds 10] [--arm list20|get|create]
                             [--target service|fastify] [--top 12] [--set NAME=value]... [--json file]

Runs the service (or, with --target fastify, the bench's ceiling: bare Fastify, same SQL) under
node --cpu-prof at a fixed load and prints its top self-time costs per request, by function and
by package. The .cpuprofile stays in test-artifacts/profiles/ for a flame graph (Chrome DevTools,
speedscope). --set passes a setting to the service (LOG_LEVEL=warn, say); --json also writes the
summary as JSON. Needs Postgres (BENCH_DATABASE_URL, else DATABASE_URL, else 127.0.0.1:5432);
its database and server are removed at the end, on failure and on Ctrl-C.`;

const { values } = parseCommandLine(USAGE, {
  options: {
    connections: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '10' },
    arm: { type: 'string', default: 'list20' },
    top: { type: 'string', default: '12' },
    target: { type: 'string', default: 'service' },
    json: { type: 'string' },
    set: { type: 'string', multiple: true, default: [] },
  },
});
const connections = Number(values.connections);
const seconds = Number(values.seconds);
const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? LOCAL_POSTGRES_URL;

const outDir = path.join(projectRoot, 'test-artifacts', 'profiles', `${values.target}-${values.arm}-c${connections}-${Date.now()}`);
// The database and the server are undone at the end, on failure and on Ctrl-C (lib/cleanup.ts).
await runCommand(async () => {
  await mkdir(outDir, { recursive: true });
  const db = await createPostgresDatabase(adminUrl, `as_profile_${process.pid}`, 10_000);
  try {
    const env = {
      ...db.env,
      RATE_LIMIT_ANONYMOUS: '100000000/1000000000',
      ...Object.fromEntries(values.set!.map((pair) => pair.split(/=(.*)/s).slice(0, 2))),
    };
    const bare = values.target === 'fastify';
    const t = bare
      ? await startTarget('fastify', 'bench/baselineServer.ts', db.env, '/pets/1', ['--cpu-prof', `--cpu-prof-dir=${outDir}`])
      : await startTarget('service', 'src/server.ts', env, '/readyz', ['--cpu-prof', `--cpu-prof-dir=${outDir}`]);
    const auth = { authorization: `Bearer ${db.key}` };
    const api = bare ? t.baseUrl : `${t.baseUrl}/v1`;
    const arms: Record<string, Arm> = {
      list20: { name: 'listPets limit=20', url: `${api}/pets?limit=20`, headers: auth },
      get: { name: 'getPet', url: `${api}/pets/1`, headers: auth },
      create: {
        name: 'createPet',
        url: `${api}/pets`,
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bench', categoryId: 1 }),
        expect: 201,
      },
    };
    const arm = arms[values.arm!];
    if (!arm) throw new Error(`--arm must be one of ${Object.keys(arms).join(', ')}`);
    await measure(arm, { seconds: 2, connections });
    const measuredFrom = Date.now() - t.spawnedAt;
    const m = await measure(arm, { seconds, connections });
    const { requests } = m;
    await t.stop();
    const file = (await readdir(outDir)).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no profile written in ${outDir}`);
    // Only the measured load: start-up and warm-up are left out (the profile starts with the process).
    const summary = summarizeProfile(path.join(outDir, file), Number(values.top), measuredFrom);
    const rows = (costs: Cost[]) =>
      costs.map((c) => `| ${c.name.replace(/\|/g, '\\|')} | ${(c.share * 100).toFixed(1)}% | ${((c.ms * 1000) / requests).toFixed(1)} |`).join('\n');
    console.log(`# ${arm.name}, ${connections} connections, ${seconds} s: ${m.rps.toFixed(0)} req/s${m.invalid ? ` INVALID: ${m.invalid}` : ''}`);
    console.log(
      `busy ${(summary.busyMs / 1000).toFixed(1)} s (${((summary.busyMs * 1000) / requests).toFixed(1)} µs per request), idle ${(summary.idleShare * 100).toFixed(0)}% of the profile\n`,
    );
    console.log(`| function (self time) | share of busy | µs per request |\n|---|---:|---:|\n${rows(summary.functions)}\n`);
    console.log(`| package (self time) | share of busy | µs per request |\n|---|---:|---:|\n${rows(summary.packages)}\n`);
    console.log(`profile: ${path.relative(projectRoot, path.join(outDir, file))}`);
    if (values.json) {
      const perRequest = (c: Cost) => ({ name: c.name, share: c.share, microsPerRequest: (c.ms * 1000) / requests });
      const result = {
        target: values.target,
        arm: arm.name,
        connections,
        seconds,
        rps: m.rps,
        microsPerRequest: (summary.busyMs * 1000) / requests,
        functions: summary.functions.map(perRequest),
        packages: summary.packages.map(perRequest),
        commit: process.env.PROFILE_COMMIT,
        date: new Date().toISOString(),
      };
      await writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
    }
  } finally {
    await db.drop();
    if (process.env.KEEP_PROFILE === '0') await rm(outDir, { recursive: true, force: true });
  }
});

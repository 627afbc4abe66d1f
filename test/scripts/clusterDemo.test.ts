import { spawn } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { stop } from '../helpers/processes.js';
import { scratchDir, SCRATCH_ROOT_VARIABLE } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';
import { postgresServerUrl, withoutHAProxy, withoutPgBouncer, withoutRedisCluster } from '../helpers/services.js';
import { markedProcesses, RUN_VARIABLE } from '../helpers/testRun.js';

async function databaseExists(name: string): Promise<boolean> {
  const admin = new pg.Client({ connectionString: postgresServerUrl() });
  await admin.connect();
  try {
    return (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
  } finally {
    await admin.end();
  }
}

/**
 * `npm run cluster:demo` in a process group of its own, as a terminal runs it, until `ready`
 * appears in its output; then Ctrl-C (SIGINT to the whole group). What it started carries a
 * marker of its own, and its folders go into a folder of its own, so what is left can be seen.
 */
async function interrupt(ready: RegExp) {
  const marker = `demo-${process.pid}-${Date.now()}`;
  const folders = path.join(await scratchDir('as-demo-'), 'scratch');
  await mkdir(folders);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  const demo = spawn('npm', ['run', 'cluster:demo'], {
    cwd: projectRoot,
    env: { ...inherited, DATABASE_URL: postgresServerUrl(), [RUN_VARIABLE]: marker, [SCRATCH_ROOT_VARIABLE]: folders },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  demo.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  demo.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    expect(await waitFor(() => ready.test(output), 180_000, 100), output).toBe(true);
    const database = /Postgres database (as_demo_\d+)/.exec(output)![1]!;
    process.kill(-demo.pid!, 'SIGINT');
    await stop(demo, { signal: 'SIGINT', graceMs: 90_000 });
    // As a shell reports it: npm itself may end by the signal, after its script has exited 130.
    const exitCode = demo.exitCode ?? 128 + (demo.signalCode === 'SIGINT' ? 2 : 0);
    return { exitCode, output, database, left: markedProcesses(marker), folders: await readdir(folders) };
  } finally {
    for (const pid of markedProcesses(marker)) process.kill(pid, 'SIGKILL');
  }
}

describe.skipIf(withoutPgBouncer() || withoutHAProxy() || withoutRedisCluster())('npm run cluster:demo, interrupted with Ctrl-C', () => {
  it('once running: stops HAProxy, the instances, PgBouncer and the Redis Cluster, and drops its database', async () => {
    const run = await interrupt(/Ctrl-C stops everything\./);
    expect(run.output).toMatch(/API key \(free plan/);
    expect(run.output).toMatch(/SIGINT: cleaning up \(/);
    expect(run.exitCode).toBe(130);
    expect(run.left).toEqual([]);
    expect(run.folders).toEqual([]);
    expect(await databaseExists(run.database)).toBe(false);
  }, 300_000);

  it('while still starting: the same', async () => {
    const run = await interrupt(/Starting: Postgres database as_demo_\d+/);
    expect(run.output).not.toMatch(/Ctrl-C stops everything\./);
    expect(run.exitCode).toBe(130);
    expect(run.left).toEqual([]);
    expect(run.folders).toEqual([]);
    expect(await databaseExists(run.database)).toBe(false);
  }, 300_000);
});

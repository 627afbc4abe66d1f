import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { projectRoot } from '../../src/paths.js';
import { postgresServerUrl } from '../helpers/services.js';
import { alive, markedProcesses, runById, type TestRun } from '../helpers/testRun.js';

/*
 * A test run (test/long/fixture: the suite's own global setup, a test that starts a server, a
 * redis-server, processes with children, a database and a folder, then waits) cut short three
 * ways. Each time nothing of it may remain: no process, no folder under the scratch base, no
 * database.
 */

interface Fixture {
  child: ChildProcess;
  output(): string;
  /** Resolves once the fixture's test has begun: the run it belongs to. */
  started(): Promise<TestRun>;
  /** Resolves once it has started everything: their pids and folders. */
  ready(): Promise<{ pids: number[]; dirs: string[] }>;
}

/** Resolves with `child`'s exit code once it has exited by itself (null: after `timeoutMs`, or by a signal). */
function exited(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function startFixture(env: Record<string, string> = {}): Promise<Fixture> {
  const files = await scratchDir('as-interrupted-');
  const startedFile = path.join(files, 'started.json');
  const readyFile = path.join(files, 'ready.json');
  // A process group of its own, as `npm test` in a terminal: Ctrl-C signals the whole group.
  const child = spawn(process.execPath, [path.join(projectRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--config', 'test/long/fixture/vitest.config.ts'], {
    cwd: projectRoot,
    env: { ...process.env, FIXTURE_STARTED: startedFile, FIXTURE_READY: readyFile, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const read = async <T>(file: string): Promise<T> => {
    const there = await waitFor(() => existsSync(file) || child.exitCode !== null, 240_000, 100);
    if (!there || !existsSync(file)) throw new Error(`the fixture run wrote no ${path.basename(file)}:\n${output}`);
    return JSON.parse(await readFile(file, 'utf8')) as T;
  };
  return {
    child,
    output: () => output,
    started: async () => runById((await read<{ run: string }>(startedFile)).run),
    ready: () => read(readyFile),
  };
}

async function databasesOf(run: TestRun): Promise<string[]> {
  const admin = new pg.Client({ connectionString: postgresServerUrl() });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`as\\_${run.id.replace(/_/g, '\\_')}\\_%`]);
    return rows.map((r) => r.datname);
  } finally {
    await admin.end();
  }
}

/** Waits (a generous bound: the reaper works while the machine may be busy) until nothing of the run is left; what is, if anything. */
async function leftovers(run: TestRun, pids: number[], dirs: string[]) {
  const left = async () => ({
    processes: markedProcesses(run.id),
    pids: pids.filter(alive),
    folders: [run.dir, ...dirs].filter((dir) => existsSync(dir)),
    databases: await databasesOf(run),
  });
  await waitFor(async () => Object.values(await left()).every((list) => list.length === 0), 60_000, 250);
  return left();
}

const nothing = { processes: [], pids: [], folders: [], databases: [] };

describe('a test run cut short leaves nothing behind', () => {
  it('Ctrl-C (SIGINT to the whole process group) halfway', async () => {
    const fixture = await startFixture();
    const run = await fixture.started();
    const { pids, dirs } = await fixture.ready();
    const workers = (await readdir(path.join(run.dir, 'workers'))).map(Number);
    // What the run left, before: there is something to clean up.
    expect(pids.every(alive), fixture.output()).toBe(true);
    expect(markedProcesses(run.id).length).toBeGreaterThanOrEqual(pids.length);
    expect(dirs.every((dir) => existsSync(dir))).toBe(true);

    process.kill(-fixture.child.pid!, 'SIGINT');
    await exited(fixture.child, 60_000);
    expect(await leftovers(run, [...pids, ...workers], dirs), fixture.output()).toEqual(nothing);
  }, 300_000);

  it('vitest itself killed (SIGKILL): no teardown runs, its workers and everything they started are ended all the same', async () => {
    const fixture = await startFixture();
    const run = await fixture.started();
    const { pids, dirs } = await fixture.ready();
    const workers = (await readdir(path.join(run.dir, 'workers'))).map(Number);
    expect(workers.length).toBeGreaterThan(0);

    fixture.child.kill('SIGKILL');
    expect(await leftovers(run, [...pids, ...workers], dirs), fixture.output()).toEqual(nothing);
  }, 300_000);

  it('a test that times out with everything it started still running', async () => {
    const fixture = await startFixture({ FIXTURE_TEST_TIMEOUT: '20000' });
    const run = await fixture.started();
    const exitCode = await exited(fixture.child, 240_000);
    expect(fixture.output()).toMatch(/Test timed out in 20000ms/);
    expect(exitCode).toBe(1);
    expect(await leftovers(run, [], []), fixture.output()).toEqual(nothing);
    expect(fixture.output()).toMatch(/The run's teardown killed \d+ process\(es\) that tests left running\./);
  }, 300_000);
});

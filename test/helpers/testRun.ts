import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dropDatabases } from './databases.js';
import { SCRATCH_BASE } from './scratchDir.js';

/*
 * What one test run (one vitest project in one vitest process) made, found again whatever
 * stopped it. Every process a test starts (servers, redis-server, pgbouncer, haproxy, and
 * their children) inherits ANIMAL_STORE_TEST_RUN=<run id> in its environment, every
 * throwaway directory is made inside the run's folder, and every database is named
 * as_<run id>_…; the vitest workers write their pids into the folder. cleanUpRun() removes
 * all of that: called by the run's reaper (test/helpers/reaper.ts) when the run ends, and
 * for a run that died without its reaper by the next run's setup.
 */

/** The variable marking a run's processes: inherited by everything a test starts. */
export const RUN_VARIABLE = 'ANIMAL_STORE_TEST_RUN';

export interface TestRun {
  /** `<vitest pid>_<project>`: unique among live runs; databases of the run are named `as_<id>_…`. */
  id: string;
  /** The folder every throwaway directory of the run goes into. */
  dir: string;
}

const RUN_PREFIX = 'animal-store-run-';

export function testRun(pid: number, project: string): TestRun {
  return runById(`${pid}_${project.replace(/[^a-z0-9]/gi, '')}`);
}

export function runById(id: string): TestRun {
  return { id, dir: path.join(SCRATCH_BASE, `${RUN_PREFIX}${id}`) };
}

/** The run's folder; open to every user, since a PgBouncer of a test drops to `nobody` and reads its files there. */
export async function createRunDir(run: TestRun): Promise<void> {
  await mkdir(path.join(run.dir, 'workers'), { recursive: true, mode: 0o755 });
}

/** Called in each vitest worker: its pid, so that a reaper whose run died can end it too. */
export async function registerWorker(run: TestRun): Promise<void> {
  await writeFile(path.join(run.dir, 'workers', String(process.pid)), '').catch(() => {});
}

/** Linux only (/proc); elsewhere nothing is found and only folders and databases are cleaned up. */
function pids(): number[] {
  try {
    return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  } catch {
    return [];
  }
}

function read(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

/** Processes whose environment carries the run's marker (never this process). */
export function markedProcesses(runId: string): number[] {
  const marker = `\0${RUN_VARIABLE}=${runId}\0`;
  return pids().filter((pid) => pid !== process.pid && `\0${read(`/proc/${pid}/environ`)}`.includes(marker));
}

/** Workers of the run that are still vitest workers (a pid may have been reused since). */
async function workerProcesses(run: TestRun): Promise<number[]> {
  const names = await readdir(path.join(run.dir, 'workers')).catch(() => [] as string[]);
  return names.map(Number).filter((pid) => pid !== process.pid && read(`/proc/${pid}/cmdline`).includes('vitest'));
}

/** The process exists (signal 0). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** SIGKILLs until none is left: a process killed in one pass may have started another just before. */
async function killAll(find: () => Promise<number[]> | number[]): Promise<number> {
  let killed = 0;
  for (let pass = 0; pass < 20; pass++) {
    const found = (await find()).filter(alive);
    if (found.length === 0) return killed;
    for (const pid of found) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // gone already
      }
    }
    await sleep(100);
  }
  return killed;
}

export interface CleanUp {
  processes: number;
  workers: number;
}

/**
 * Removes everything of `run`: its processes, its vitest workers too when `workers` (the
 * run died), its folder, and its databases on each Postgres server of `adminUrls`.
 */
export async function cleanUpRun(run: TestRun, { adminUrls = [], workers = false }: { adminUrls?: string[]; workers?: boolean } = {}): Promise<CleanUp> {
  const workerPids = workers ? await workerProcesses(run) : [];
  const killedWorkers = await killAll(() => workerPids);
  const processes = await killAll(() => markedProcesses(run.id));
  await rm(run.dir, { recursive: true, force: true });
  for (const url of new Set(adminUrls)) {
    await dropDatabases(url, `as\\_${run.id.replace(/_/g, '\\_')}\\_%`).catch(() => {});
  }
  return { processes, workers: killedWorkers };
}

/** Runs whose vitest process is gone but whose folder is still there (a SIGKILL, a crash, a killed reaper). */
export function deadRuns(): TestRun[] {
  let names: string[];
  try {
    names = readdirSync(SCRATCH_BASE);
  } catch {
    return [];
  }
  return names
    .filter((name) => name.startsWith(RUN_PREFIX))
    .map((name) => {
      const id = name.slice(RUN_PREFIX.length);
      return { id, dir: path.join(SCRATCH_BASE, name), pid: Number(id.split('_')[0]) };
    })
    .filter((run) => Number.isInteger(run.pid) && run.pid > 0 && !alive(run.pid))
    .map(({ id, dir }) => ({ id, dir }));
}

import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, runScript, spawnScript, waitUntilAnswers } from './helpers/run.js';
import { createServerDatabase, type ServerDatabase } from './helpers/testDatabase.js';
import { awayFromMinuteBoundary, cleanupSharedRedis, REDIS_URL, uniquePrefix } from './ratelimit/helpers.js';

/** The primary's worker processes (tsx also starts an esbuild process, which is not one). */
const childPids = (pid: number) =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes('src/server.ts'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));

/**
 * WORKERS=2: node:cluster workers on one port. Needs Postgres (the embedded store has one
 * owner) and Redis, whichever backend the rest of the suite uses.
 */
describe('several workers (WORKERS=2)', () => {
  let env: Record<string, string>;
  let base: string;
  let primary: ReturnType<typeof spawnScript>;
  let exited: Promise<number | null>;
  let db: ServerDatabase;

  beforeAll(async () => {
    db = await createServerDatabase('cluster');
    const port = await freePort();
    env = { ...db.env, REDIS_URL, REDIS_PREFIX: uniquePrefix(), WORKERS: '2', PORT: String(port), LOG_LEVEL: 'warn' };
    primary = spawnScript('src/server.ts', env);
    exited = new Promise((resolve) => primary.once('exit', resolve));
    base = `http://127.0.0.1:${port}`;
    await waitUntilAnswers(`${base}/readyz`);
  }, 60_000);

  afterAll(async () => {
    if (primary.exitCode === null) primary.kill('SIGKILL');
    await db?.drop();
    await cleanupSharedRedis();
  });

  it('shares one quota between the workers', async () => {
    await awayFromMinuteBoundary();
    const key = (await runScript('scripts/apikey.ts', ['create', '--plan', 'free'], env)).stdout.trim().split('\n').at(-1)!;
    // Separate connections, so the cluster spreads them over both workers.
    const statuses = await Promise.all(
      Array.from({ length: 80 }, () =>
        fetch(`${base}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}`, connection: 'close' } }).then((r) => r.status),
      ),
    );
    expect({ 200: statuses.filter((s) => s === 200).length, 429: statuses.filter((s) => s === 429).length }).toEqual({ 200: 60, 429: 20 });
  });

  it('replaces a worker that dies, and keeps serving', async () => {
    const workers = childPids(primary.pid!);
    expect(workers).toHaveLength(2);
    process.kill(workers[0]!, 'SIGKILL');
    let now: number[] = [];
    for (let i = 0; i < 100; i++) {
      now = childPids(primary.pid!);
      if (now.length === 2 && !now.includes(workers[0]!)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(now).toHaveLength(2);
    expect(now).not.toContain(workers[0]);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('stops every worker and exits 0 on SIGTERM', async () => {
    const workers = childPids(primary.pid!);
    primary.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });
});

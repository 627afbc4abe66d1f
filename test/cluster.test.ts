import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from './helpers/apiKeys.js';
import { waitFor } from './helpers/poll.js';
import { startServer, type Server } from './helpers/processes.js';
import { parsePrometheus, sampleValue, type Sample } from './helpers/prometheus.js';
import { withoutRedis } from './helpers/services.js';
import { createServerDatabase, type ServerDatabase } from './helpers/testDatabase.js';
import { cleanupSharedRedis, expectSharedLimits, REDIS_URL, uniquePrefix } from './ratelimit/helpers.js';

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
describe.skipIf(withoutRedis())('several workers (WORKERS=2)', () => {
  let base: string;
  let primary: Server;
  let db: ServerDatabase;

  beforeAll(async () => {
    db = await createServerDatabase('cluster');
    const env = { ...db.env, REDIS_URL, REDIS_PREFIX: uniquePrefix(), REDIS_TIMEOUT_MS: '2000', WORKERS: '2', LOG_LEVEL: 'warn' };
    primary = await startServer('src/server.ts', env, { readyPath: '/readyz' });
    base = primary.baseUrl;
    await expectSharedLimits(base);
  }, 60_000);

  afterAll(async () => {
    await primary?.stop();
    await db?.drop();
    await cleanupSharedRedis();
  });

  it('shares one quota between the workers', async () => {
    // Worker processes read the system clock, which a test cannot move. So the quota checked
    // is a day's (60 a day, 1000 a minute): a minute boundary cannot split the count, and a
    // day boundary can only within the last seconds before 00:00 UTC, which this waits out
    // (the 80 requests take a second or two; 30 s is ample).
    const toMidnight = 86_400_000 - (Date.now() % 86_400_000);
    if (toMidnight < 30_000) await new Promise((r) => setTimeout(r, toMidnight + 100));
    const key = await createKey(db.env, { plan: 'enterprise', perMinute: 1000, perDay: 60 });
    // Separate connections, so the cluster spreads them over both workers.
    const statuses = await Promise.all(
      Array.from({ length: 80 }, () =>
        fetch(`${base}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}`, connection: 'close' } }).then((r) => r.status),
      ),
    );
    expect({ 200: statuses.filter((s) => s === 200).length, 429: statuses.filter((s) => s === 429).length }).toEqual({ 200: 60, 429: 20 });
  }, 60_000);

  it('shows every worker in one scrape of the primary\'s metrics listener', async () => {
    const key = await createKey(db.env, { plan: 'enterprise', perMinute: 1000, perDay: 1000 });
    const scrape = async () => parsePrometheus(await (await fetch(primary.metricsUrl)).text());
    const served = (samples: Sample[]) => sampleValue(samples, 'animal_store_rate_limit_decisions_total', { plan: 'enterprise', outcome: 'allowed' }) ?? 0;
    const before = served(await scrape());
    const statuses = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${base}/v1/pets/1`, { headers: { authorization: `Bearer ${key}`, connection: 'close' } }).then((r) => r.status),
      ),
    );
    expect(statuses.every((s) => s === 200 || s === 404)).toBe(true);
    // Every scrape must show both workers' counts.
    for (let i = 0; i < 6; i++) {
      const samples = await scrape();
      expect(served(samples) - before).toBe(30);
      expect(sampleValue(samples, 'animal_store_rate_limit_mode', { mode: 'shared' })).toBe(2);
    }
  });

  it('replaces a worker that dies, and keeps serving', async () => {
    const workers = childPids(primary.child.pid!);
    expect(workers).toHaveLength(2);
    process.kill(workers[0]!, 'SIGKILL');
    let now: number[] = [];
    await waitFor(() => {
      now = childPids(primary.child.pid!);
      return now.length === 2 && !now.includes(workers[0]!);
    }, 10_000);
    expect(now).toHaveLength(2);
    expect(now).not.toContain(workers[0]);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('stops every worker and exits 0 on SIGTERM', async () => {
    const workers = childPids(primary.child.pid!);
    expect(await primary.stop()).toBe(0);
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });
});

import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { waitFor } from '../../scripts/lib/poll.js';
import { startServer } from '../../scripts/lib/processes.js';
import { countOutcomes, getOnce, type OneShot } from '../helpers/oneShot.js';
import { withoutPostgresServer, withoutRedis } from '../helpers/services.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { cleanupSharedRedis, REDIS_URL, uniquePrefix } from '../ratelimit/helpers.js';

/** The worker processes of a cluster primary. */
function workersOf(primaryPid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(primaryPid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when there is none
  }
}

let db: ServerDatabase;
beforeAll(async () => {
  if (!withoutPostgresServer()) db = await createServerDatabase('supervise');
});
afterAll(async () => {
  await cleanupSharedRedis();
  await db?.drop();
});

describe.skipIf(withoutPostgresServer() || withoutRedis())('WORKERS=2 when a worker dies during a database outage', () => {
  it('keeps the other worker serving, retries the replacement with backoff, and recovers with the database', async () => {
    const { child: primary, baseUrl: base } = await startServer(
      'src/server.ts',
      { ...db.env, REDIS_URL, REDIS_PREFIX: uniquePrefix(), LOG_LEVEL: 'warn', WORKERS: '2', SHUTDOWN_DRAIN_SECONDS: '0' },
      { readyPath: '/readyz', stdout: 'ignore' },
    );
    onTestFinished(() => {
      if (primary.exitCode === null && primary.signalCode === null) primary.kill('SIGKILL'); // its workers exit with it
    });
    const port = Number(new URL(base).port);
    let stderr = '';
    primary.stderr!.on('data', (c) => (stderr += c));
    const exit = new Promise<number | null>((resolve) => primary.once('exit', resolve));
    expect(await waitFor(async () => workersOf(primary.pid!).length === 2, 10_000)).toBe(true);

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db.name]);
    process.kill(workersOf(primary.pid!)[0]!, 'SIGKILL');
    // From when the primary knows: a connection handed to the worker as it died is lost with it.
    expect(await waitFor(() => /exited \(SIGKILL\)/.test(stderr), 10_000)).toBe(true);

    // For five seconds: replacements keep failing to open the database, and the service keeps answering.
    const answers: OneShot[] = [];
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      answers.push(await getOnce(port, '/healthz'));
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(countOutcomes(answers)).toEqual({ 200: answers.length });
    expect(primary.exitCode).toBeNull();
    const restarts = stderr.match(/starting another in \d+ ms/g) ?? [];
    expect(restarts.length).toBeGreaterThanOrEqual(2); // the replacement failed and was retried
    const delays = restarts.map((line) => Number(/in (\d+) ms/.exec(line)![1]));
    expect(delays).toEqual([...delays].sort((a, b) => a - b)); // backing off

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    expect(await waitFor(async () => workersOf(primary.pid!).length === 2 && (await fetch(`${base}/readyz`)).ok, 20_000, 200)).toBe(true);

    primary.kill('SIGTERM');
    const code = await Promise.race([exit, new Promise<string>((resolve) => setTimeout(() => resolve('still running 30 s after SIGTERM'), 30_000))]);
    expect(code, stderr).toBe(0);
  }, 120_000);
});

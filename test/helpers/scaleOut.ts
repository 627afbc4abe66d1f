import pg from 'pg';
import { timeoutSettings, type ServerTimeouts } from '../../src/db/serverTimeouts.js';
import { createKey, type KeyOptions } from './apiKeys.js';
import { createDatabase, dropDatabase } from './databases.js';
import { startHAProxy, type HAProxy, type HealthChecks } from './haproxy.js';
import { startPgBouncer, type PgBouncer } from './pgbouncer.js';
import { waitFor } from './poll.js';
import { freePort } from './ports.js';
import { startServer, stop, type Server } from './processes.js';
import { startRedisCluster, type RedisCluster } from './redisCluster.js';

export interface ScaleOutOptions {
  /** A Postgres admin URL: the topology creates a database of its own on that server, and drops it on stop(). */
  adminUrl: string;
  database: string;
  instances?: number;
  /** SHUTDOWN_DRAIN_SECONDS: must exceed the checks' fall × inter, so HAProxy takes a draining instance out while it still serves. */
  drainSeconds?: number;
  graceSeconds?: number;
  checks?: Partial<HealthChecks>;
  /** More settings for every instance (LOG_LEVEL, quotas…). */
  env?: Record<string, string>;
}

/** One API instance: its port stays the same across restarts, so HAProxy's server line stays valid. */
export interface Instance {
  /** Its server name in HAProxy. */
  name: string;
  port: number;
  baseUrl: string;
  /** Its process id while it runs. */
  pid(): number | undefined;
  /** Its metrics listener while it runs (a new port at each start). */
  metricsUrl(): string | undefined;
  /** The last lines it printed (logs at LOG_LEVEL, warn by default). */
  output(): string;
}

export interface ScaleOut {
  /** HAProxy's frontend: where clients go. */
  url: string;
  statsUrl: string;
  haproxy: HAProxy;
  redis: RedisCluster;
  pgbouncer: PgBouncer;
  instances: Instance[];
  /** Every instance's settings (DATABASE_URL through PgBouncer, REDIS_URL of the cluster…). */
  env: Record<string, string>;
  createKey(options: KeyOptions): Promise<string>;
  /** SIGTERM instance `i`, wait for its exit (drain, then in-flight requests), start it again on its port. */
  restart(i: number): Promise<Restart>;
  /** SIGKILL instance `i`: no drain, requests in flight on it are cut. */
  kill(i: number): Promise<void>;
  /** Starts instance `i` again on its port after kill(). */
  start(i: number): Promise<void>;
  /** Stops HAProxy, the instances, PgBouncer and the Redis Cluster, and drops the database. */
  stop(): Promise<void>;
}

export interface Restart {
  exitCode: number | null;
  /** HAProxy's state of the instance when it exited: DOWN if the drain was long enough. */
  stateAtExit: string | undefined;
}

/** The pool's defaults (DB_STATEMENT_TIMEOUT_MS, DB_LOCK_TIMEOUT_MS), set on the role as PgBouncer needs. */
const TIMEOUTS: ServerTimeouts = { statementTimeoutMs: 5000, lockTimeoutMs: 3000 };

interface Slot {
  name: string;
  port?: number;
  server?: Server;
  output: string;
}

/** Until the instance counts limits in the shared cluster (not on its own); false after `timeoutMs`. */
function sharedLimits(baseUrl: string, timeoutMs: number): Promise<boolean> {
  return waitFor(async () => {
    const res = await fetch(`${baseUrl}/readyz`).catch(() => undefined);
    const body = (await res?.json().catch(() => undefined)) as { checks?: { rateLimits?: string } } | undefined;
    return body?.checks?.rateLimits === 'shared';
  }, timeoutMs);
}

/** Sets the timeouts on the role in `database`: a transaction-pooling PgBouncer cannot pass them per connection. */
async function setRoleTimeouts(adminUrl: string, database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const [name, ms] of Object.entries(timeoutSettings(TIMEOUTS))) {
      await admin.query(`ALTER ROLE CURRENT_USER IN DATABASE ${admin.escapeIdentifier(database)} SET ${name} = ${ms}`);
    }
  } finally {
    await admin.end();
  }
}

/**
 * The production topology on one machine: a Postgres database of its own behind PgBouncer
 * (transaction mode), a 3-master Redis Cluster, `instances` API processes (src/server.ts)
 * and HAProxy in front, checking /readyz. Whatever started is stopped again if a step fails.
 */
export async function startScaleOut({
  adminUrl,
  database,
  instances = 3,
  drainSeconds = 2,
  graceSeconds = 5,
  checks = {},
  env: extra = {},
}: ScaleOutOptions): Promise<ScaleOut> {
  const { interMs = 500, fall = 2 } = checks;
  if (drainSeconds * 1000 <= interMs * fall) {
    throw new Error(`SHUTDOWN_DRAIN_SECONDS (${drainSeconds}) must exceed HAProxy's fall × inter (${fall} × ${interMs} ms)`);
  }
  const cleanUps: Array<() => Promise<unknown>> = [];
  const stopAll = async () => {
    for (const cleanUp of cleanUps.splice(0).reverse()) await cleanUp();
  };
  const slots: Slot[] = Array.from({ length: instances }, (_, i) => ({ name: `api${i + 1}`, output: '' }));
  // The test process may die without calling stop(): leave no instance behind.
  const onExit = () => {
    for (const slot of slots) slot.server?.child.kill('SIGKILL');
  };

  try {
    const databaseUrl = await createDatabase(adminUrl, database);
    cleanUps.push(() => dropDatabase(adminUrl, database));
    await setRoleTimeouts(adminUrl, database); // before PgBouncer opens a server session: a session takes them when it starts
    const [bouncing, clustering] = await Promise.allSettled([startPgBouncer(databaseUrl, { poolSize: 6 }), startRedisCluster()]);
    for (const started of [bouncing, clustering]) if (started.status === 'fulfilled') cleanUps.push(() => started.value.stop());
    if (bouncing.status === 'rejected') throw bouncing.reason;
    if (clustering.status === 'rejected') throw clustering.reason;
    const [pgbouncer, redis] = [bouncing.value, clustering.value];

    const lbPort = await freePort();
    const env: Record<string, string> = {
      DATABASE_URL: pgbouncer.url,
      DATABASE_POOLING: 'transaction',
      DB_STATEMENT_TIMEOUT_MS: String(TIMEOUTS.statementTimeoutMs),
      DB_LOCK_TIMEOUT_MS: String(TIMEOUTS.lockTimeoutMs),
      REDIS_URL: redis.url,
      // HAProxy connects from loopback: believe its X-Forwarded-For, from nobody else.
      TRUST_PROXY: '127.0.0.1',
      PUBLIC_BASE_URL: `http://127.0.0.1:${lbPort}`,
      SHUTDOWN_DRAIN_SECONDS: String(drainSeconds),
      SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
      LOG_LEVEL: 'warn',
      ...extra,
    };

    const startSlot = async (slot: Slot) => {
      const server = await startServer('src/server.ts', env, { readyPath: '/readyz', port: slot.port });
      slot.server = server;
      slot.port = Number(new URL(server.baseUrl).port);
      server.child.stdout!.on('data', (chunk: Buffer) => (slot.output = (slot.output + chunk.toString()).slice(-8000)));
      if (!(await sharedLimits(server.baseUrl, 15_000))) throw new Error(`${slot.name} did not count limits in the Redis Cluster within 15 s:\n${slot.output}`);
    };
    const stopSlot = async (slot: Slot, signal: NodeJS.Signals) => {
      const server = slot.server;
      slot.server = undefined;
      return server ? stop(server.child, { signal }) : null;
    };
    process.once('exit', onExit);
    cleanUps.push(async () => {
      process.off('exit', onExit);
      await Promise.all(slots.map((slot) => stopSlot(slot, 'SIGTERM')));
    });
    // One after another: three cold starts at once would only compete for the two cores.
    for (const slot of slots) await startSlot(slot);

    const haproxy = await startHAProxy({ servers: slots.map((s) => ({ name: s.name, port: s.port! })), port: lbPort, checks });
    cleanUps.push(() => haproxy.stop());
    for (const slot of slots) {
      if (!(await haproxy.waitForState(slot.name, 'UP', 10_000))) throw new Error(`HAProxy did not see ${slot.name} UP within 10 s:\n${haproxy.log()}`);
    }

    const slotAt = (i: number) => {
      const slot = slots[i];
      if (!slot) throw new Error(`no instance ${i}`);
      return slot;
    };
    return {
      url: haproxy.url,
      statsUrl: haproxy.statsUrl,
      haproxy,
      redis,
      pgbouncer,
      env,
      instances: slots.map((slot) => ({
        name: slot.name,
        port: slot.port!,
        baseUrl: `http://127.0.0.1:${slot.port}`,
        pid: () => slot.server?.child.pid,
        metricsUrl: () => slot.server?.metricsUrl,
        output: () => slot.output,
      })),
      createKey: (options) => createKey(env, options),
      async restart(i) {
        const exitCode = await stopSlot(slotAt(i), 'SIGTERM');
        const stateAtExit = (await haproxy.states())[slotAt(i).name];
        await startSlot(slotAt(i));
        return { exitCode, stateAtExit };
      },
      async kill(i) {
        await stopSlot(slotAt(i), 'SIGKILL');
      },
      start: (i) => startSlot(slotAt(i)),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

import { defineConfig } from 'vitest/config';

/*
 * Test groups (vitest projects). `npm test` runs unit and main; .ci/run runs every group.
 * What each needs besides Node is in docs/TESTING.md.
 */

/** Pure logic: no database, no server, no global setup. `npx vitest run --project unit`. */
const UNIT = [
  'test/auth/apiKey.test.ts',
  'test/auth/keyIndex.test.ts',
  'test/config.test.ts',
  'test/contract/contractCheck.test.ts',
  'test/contract/document.test.ts',
  'test/errors/codes.test.ts',
  'test/errors/errorHandler.test.ts',
  'test/logging/faultLog.test.ts',
  'test/pagination/cursor.test.ts',
  'test/process/startupErrors.test.ts',
  'test/properties/arbitraries.test.ts',
  'test/ratelimit/memoryStore.test.ts',
  'test/scripts/cleanup.test.ts',
  'test/docs/links.test.ts',
  'test/jobs/fairWorkers.test.ts',
  'test/events/keptConnections.test.ts',
  'test/http/corsPolicy.test.ts',
  'test/architecture/imports.test.ts',
  'test/api/compiledOnce.test.ts',
];
/** The service and its commands, each in a process of its own: `npm run test:processes`. */
const PROCESSES = [
  'test/cli/**/*.test.ts',
  'test/process/*.process.test.ts',
  'test/server.test.ts',
  'test/tracing/tracing.test.ts',
  // Optic, installed into tools/compat by npm run compat:check, which .ci/run runs before this group.
  'test/scripts/compatCheck.test.ts',
];
/**
 * Long runs: thousands of generated requests, limits and keys shared by two instances, Prism's
 * contract proxy, races repeated both ways, webhook retries waited out, a fresh clone's quick
 * start, interrupted runs: `npm run test:long` (keeps `npm test` near its 90 s budget).
 */
const LONG = [
  'test/long/**/*.test.ts',
  'test/properties/api.test.ts',
  'test/ratelimit/shared.test.ts',
  'test/ratelimit/accountQuota.test.ts',
  'test/auth/revocationAcrossInstances.test.ts',
  'test/contract/prism.test.ts',
  'test/pets/statusRace.test.ts',
  'test/pets/deleteRace.test.ts',
  'test/events/delivery.test.ts',
];
/**
 * Several servers each, one file at a time: processes killed, Postgres and Redis broken, slow clients,
 * and the scale-out infrastructure the tests start themselves (PgBouncer, a Redis Cluster, HAProxy), and
 * 200,000 API keys inserted at once (seconds of Postgres work): `npm run test:faults`.
 */
const FAULTS = ['test/faults/**/*.test.ts', 'test/db/pgbouncer.test.ts', 'test/ratelimit/redisCluster.test.ts', 'test/auth/keyIndexBulk.test.ts'];
/** Real-browser runs (Debian chromium driven by playwright-core): `npm run test:browser`. */
const BROWSER = 'test/**/*.browser.test.ts';

/** Probes the services once, makes a template database, and removes whatever the run made when it ends (test/helpers/testRun.ts). */
const WITH_SERVICES = { globalSetup: ['test/helpers/globalSetup.ts'], setupFiles: ['test/helpers/runMarker.ts'] };

export default defineConfig({
  test: {
    // Bounds that tell a hang from an answer, generous enough for a machine at load 10.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file gets its own database; files run in parallel on separate processes.
    pool: 'forks',
    // Two files at a time on this 2-core machine: much of the suite waits on child processes and sockets.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      {
        extends: true,
        test: {
          name: 'main',
          include: ['test/**/*.test.ts'],
          exclude: [...UNIT, ...PROCESSES, ...LONG, ...FAULTS, BROWSER],
          // The files of a worker share their imports (the app's modules, loaded once: measured, import
          // time 31 s → 4 s and a third less CPU for the project). So a file must leave module state as
          // it found it; what must start clean (what tracing imports, say) runs in 'processes'.
          isolate: false,
          ...WITH_SERVICES,
        },
      },
      { extends: true, test: { name: 'processes', include: PROCESSES, ...WITH_SERVICES } },
      { extends: true, test: { name: 'long', include: LONG, testTimeout: 300_000, ...WITH_SERVICES } },
      // One file at a time: these start several server processes each, and must not starve each other.
      { extends: true, test: { name: 'faults', include: FAULTS, fileParallelism: false, ...WITH_SERVICES } },
      { extends: true, test: { name: 'browser', include: [BROWSER], testTimeout: 120_000, ...WITH_SERVICES } },
    ],
  },
});

import { defineConfig } from 'vitest/config';

/** Fault runs (processes killed, databases and Redis broken, slow clients): `npm run test:faults`, once in CI. */
const FAULTS = 'test/faults/**/*.test.ts';
/** Real-browser runs (Debian chromium driven by playwright-core): `npm run test:browser`, once in CI. */
const BROWSER = 'test/**/*.browser.test.ts';

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database; files run in parallel on separate processes.
    pool: 'forks',
    // Two files at a time on this 2-core machine: much of the suite waits on child processes and sockets.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [FAULTS, BROWSER] } },
      // One file at a time: these start several server processes each, and must not starve each other.
      { extends: true, test: { name: 'faults', include: [FAULTS], fileParallelism: false } },
      { extends: true, test: { name: 'browser', include: [BROWSER], testTimeout: 120_000 } },
    ],
  },
});

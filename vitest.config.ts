import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file gets its own database; files run in parallel on separate processes.
    pool: 'forks',
    // Two files at a time on this 2-core machine: much of the suite waits on child processes and sockets.
    maxWorkers: 2,
  },
});

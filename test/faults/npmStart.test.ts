import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../scripts/lib/poll.js';
import { canConnect, freePort } from '../../scripts/lib/ports.js';
import { scratchDir } from '../../scripts/lib/scratchDir.js';
import { projectRoot } from '../../src/paths.js';

describe('npm start', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await scratchDir('as-npm-start-');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('stops when SIGTERM goes to the `npm start` process itself, as a supervisor sends it', async () => {
    const port = await freePort();
    const npm = spawn('npm', ['start'], {
      cwd: projectRoot,
      env: { ...process.env, DATA_DIR: dir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_SECONDS: '0' },
      stdio: 'ignore',
    });
    const npmExited = new Promise<number | null>((resolve) => npm.once('exit', resolve));
    expect(await waitFor(() => canConnect(port), 90_000, 200)).toBe(true); // builds first (prestart)

    npm.kill('SIGTERM');
    await npmExited;
    // Nothing is left serving: npm passed the signal on, and the start script execs node.
    expect(await waitFor(async () => !(await canConnect(port)), 10_000)).toBe(true);
  }, 120_000);
});

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.js';
import { runScript, startServer, type RunResult, type Server } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../../src/config.js';
import { projectRoot } from '../../src/paths.js';

/*
 * A second `npm start` in the same checkout (issue 43): refused first for what matters, the
 * embedded store another server holds, not for its ports one by one; and by npm start's
 * prestart before the compile, not after it.
 */

let dataDir: string;
let first: Server;
let port: number;
let metricsPort: number;
beforeAll(async () => {
  dataDir = path.join(await scratchDir('as-second-'), 'data');
  metricsPort = await freePort();
  first = await startServer('src/server.ts', { DATA_DIR: dataDir, METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn' });
  port = Number(new URL(first.baseUrl).port);
});
afterAll(async () => {
  await first?.stop();
});

const refusal = () =>
  `Another Animal Store server (pid ${first.child.pid}, port ${port}) is already running on the embedded PostgreSQL in ${dataDir}; stop it, or start this one with another DATA_DIR (or a DATABASE_URL).\n`;

/**
 * scripts/prestart.mjs as `npm start` runs it, with an npm (npm_execpath) that only notes that it
 * was asked to build: whether the compile was reached, without compiling.
 */
async function prestart(env: Record<string, string>): Promise<RunResult & { built: boolean }> {
  const dir = await scratchDir('as-prestart-');
  const marker = path.join(dir, 'built');
  const fakeNpm = path.join(dir, 'npm.cjs');
  await writeFile(fakeNpm, `require('node:fs').appendFileSync(${JSON.stringify(marker)}, process.argv.slice(2).join(' ') + '\\n');\n`);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
  return new Promise((resolve) => {
    execFile(process.execPath, ['scripts/prestart.mjs'], { cwd: projectRoot, env: { ...inherited, ...env, npm_execpath: fakeNpm }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ code: !err ? 0 : typeof code === 'number' ? code : 1, stdout, stderr, built: existsSync(marker) });
    });
  });
}

describe.sequential('a second start in the same checkout', () => {
  it('on the same ports: refused in the data directory sentence alone, naming the first server (not PORT, not METRICS_PORT)', async () => {
    const second = await runScript('src/server.ts', [], { DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: String(metricsPort) });
    expect(second.code, second.stderr).toBe(1);
    expect(second.stderr).toBe(refusal());
    expect(second.stdout).toBe('');
    expect((await fetch(`${first.baseUrl}/readyz`)).status).toBe(200);
  });

  it('npm start refuses it before the compile: the data directory first, then a port in use', async () => {
    const same = await prestart({ DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: String(metricsPort) });
    expect([same.code, same.stderr, same.built]).toEqual([1, refusal(), false]);

    // Another DATA_DIR on the first server's port: the port, still before the compile.
    const other = path.join(await scratchDir('as-second-other-'), 'data');
    const busy = await prestart({ DATA_DIR: other, PORT: String(port), METRICS_PORT: '0' });
    expect([busy.code, busy.stderr, busy.built]).toEqual([
      1,
      `PORT ${port} on 127.0.0.1 is already in use, most likely by another server. Stop it, or set PORT to a free port (for example PORT=${port + 1}).\n`,
      false,
    ]);
    expect(existsSync(other)).toBe(false);

    // Nothing in the way: it goes on to the compile (here an npm that only notes it was asked).
    const free = await prestart({ DATA_DIR: other, PORT: String(await freePort()), METRICS_PORT: '0' });
    expect([free.code, free.stderr, free.built]).toEqual([0, '', true]);
  });
});

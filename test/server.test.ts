import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, runScript, spawnScript } from './helpers/run.js';

/** Resolves with everything printed once `pattern` shows up on stdout. */
function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 45_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; got: ${out}`)), timeoutMs);
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
  });
}

async function until(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

describe('server.ts on the embedded database', () => {
  let dir: string;
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('starts on a fresh DATA_DIR, prints a development key once, and stops cleanly on SIGTERM', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'as-server-'));
    const port = await freePort();
    const env = { DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'warn' };
    const server = spawnScript('src/server.ts', env);
    const out = await waitForOutput(server, /Docs: +\S+\/docs/);
    const key = /^ {2}(as_[A-Za-z0-9_-]{43})$/m.exec(out)![1]!;
    expect(out).toContain(`http://127.0.0.1:${port}/docs`);

    const res = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);

    // The CLI reaches the store through the running server; a second server is refused.
    const created = await runScript('scripts/apikey.ts', ['create', '--plan', 'pro'], env);
    expect(created.code).toBe(0);
    const second = await runScript('src/server.ts', [], { ...env, PORT: String(await freePort()) });
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('is in use by another process');

    server.kill('SIGTERM');
    expect(await exited(server)).toBe(0);
    expect(existsSync(path.join(dir, '.s.PGSQL.5432'))).toBe(false);

    // A restart keeps the data and does not print another key.
    const again = spawnScript('src/server.ts', env);
    let out2 = '';
    again.stdout!.on('data', (chunk) => (out2 += chunk));
    await until(() => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false));
    const res2 = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res2.status).toBe(200);
    expect(out2).not.toMatch(/development API key/);
    again.kill('SIGINT');
    expect(await exited(again)).toBe(0);
  }, 120_000);
});

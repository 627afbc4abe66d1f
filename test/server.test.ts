import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from './helpers/apiKeys.js';
import { runScript, startServer, stop, waitForOutput, type Server } from './helpers/processes.js';
import { scratchDir } from './helpers/scratchDir.js';

describe('server.ts on the embedded database', () => {
  let dir: string;
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('starts on a fresh DATA_DIR, prints a development key once, and stops cleanly on SIGTERM', async () => {
    dir = await scratchDir('as-server-');
    const env = { DATA_DIR: dir, LOG_LEVEL: 'warn' };
    const server = await startServer('src/server.ts', env);
    servers.push(server);
    const out = await waitForOutput(server.child, /Docs: +\S+\/docs/);
    const key = /^ {2}(as_[A-Za-z0-9_-]{43})$/m.exec(out)![1]!;
    expect(out).toContain(`${server.baseUrl}/docs`);

    const res = await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);

    // The CLI reaches the store through the running server; a second server is refused.
    await createKey(env, { plan: 'pro' });
    const second = await runScript('src/server.ts', [], { ...env, PORT: '0', METRICS_PORT: '0' });
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('is in use by another process');

    expect(await server.stop()).toBe(0);
    expect(existsSync(path.join(dir, '.s.PGSQL.5432'))).toBe(false);

    // A restart keeps the data and does not print another key.
    const again = await startServer('src/server.ts', env);
    servers.push(again);
    let out2 = '';
    again.child.stdout!.on('data', (chunk) => (out2 += chunk)); // all of it: it waited in the pipe
    const res2 = await fetch(`${again.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res2.status).toBe(200);
    expect(out2).not.toMatch(/development API key/);
    expect(await stop(again.child, { signal: 'SIGINT' })).toBe(0);
  }, 120_000);

});

import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from './helpers/apiKeys.js';
import { startServer, stop, waitForOutput, type Server } from './helpers/processes.js';
import { scratchDir } from './helpers/scratchDir.js';

describe('server.ts on the embedded database', () => {
  let dir: string;
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts PostgreSQL on a fresh DATA_DIR, prints a development key once, serves a key the CLI makes, and stops it all on SIGTERM', async () => {
    const parent = await scratchDir('as-server-');
    dir = path.join(parent, 'data');
    const env = { DATA_DIR: dir, LOG_LEVEL: 'warn' };
    const server = await startServer('src/server.ts', env);
    servers.push(server);
    const out = await waitForOutput(server.child, /Docs: +\S+\/docs/);
    const key = /^ {2}(as_[A-Za-z0-9_-]{43})$/m.exec(out)![1]!;
    expect(out).toContain(`${server.baseUrl}/docs`);

    const res = await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);

    // The CLI connects to the running PostgreSQL (its socket in DATA_DIR); the server knows the new key at once.
    const made = await createKey(env, { plan: 'pro' });
    const withMade = await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${made}` } });
    expect(withMade.status).toBe(200);

    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(true);
    expect(await server.stop()).toBe(0);
    // PostgreSQL stopped with the server: its socket and lock file are gone.
    expect(existsSync(path.join(dir, '.s.PGSQL.5432'))).toBe(false);
    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(false);

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

import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createKey } from './helpers/apiKeys.js';
import { runScript, startServer, stop, waitForOutput, type Server } from './helpers/processes.js';
import { freePort } from './helpers/ports.js';
import { scratchDir } from './helpers/scratchDir.js';
import { CONFIG_VARIABLES } from '../src/config.js';
import { OWNER_SOCKET } from '../src/db/embeddedOwner.js';
import { projectRoot } from '../src/paths.js';

describe('server.ts on the embedded database', () => {
  let dir: string;
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) await server.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('starts PostgreSQL on a fresh DATA_DIR, says how to create a key (stdout is no terminal: no key in a log), serves a key the CLI makes, refuses a second server there, and stops it all on SIGTERM', async () => {
    const parent = await scratchDir('as-server-');
    dir = path.join(parent, 'data');
    const env = { DATA_DIR: dir, LOG_LEVEL: 'warn' };
    const server = await startServer('src/server.ts', env);
    servers.push(server);
    const out = await waitForOutput(server.child, /No API key yet/);
    expect(out).toContain('No API key yet. Create one with: npm run --silent apikey -- create --plan free\n');
    expect(out).not.toMatch(/ask_[0-9A-Za-z]{36}/);
    const key = await createKey(env, { plan: 'free' });

    const res = await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);

    // The CLI connects to the running PostgreSQL (its socket in DATA_DIR); the server knows the new key at once.
    const made = await createKey(env, { plan: 'pro' });
    const withMade = await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${made}` } });
    expect(withMade.status).toBe(200);

    // A second server on the same DATA_DIR (other ports) is refused in one sentence naming the first; the first serves on.
    const port = Number(new URL(server.baseUrl).port);
    const second = await runScript('src/server.ts', [], { ...env, PORT: String(await freePort()), METRICS_PORT: String(await freePort()) });
    expect(second.code, second.stderr).toBe(1);
    expect(second.stderr).toBe(
      `Another Animal Store server (pid ${server.child.pid}, port ${port}) is already running on the embedded PostgreSQL in ${dir}; stop it, or start this one with another DATA_DIR (or a DATABASE_URL).\n`,
    );
    expect(second.stdout).toBe('');
    expect((await fetch(`${server.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);

    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(true);
    expect(existsSync(path.join(dir, OWNER_SOCKET))).toBe(true);
    expect(await server.stop()).toBe(0);
    // PostgreSQL stopped with the server: its socket and lock file are gone, and so is the server's claim.
    expect(existsSync(path.join(dir, '.s.PGSQL.5432'))).toBe(false);
    expect(existsSync(path.join(dir, 'postmaster.pid'))).toBe(false);
    expect(existsSync(path.join(dir, OWNER_SOCKET))).toBe(false);

    // A claim left by a server that was killed (its socket file, nobody listening) does not stop the next one.
    const killed = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${JSON.stringify(path.join(dir, OWNER_SOCKET))}, () => console.log('listening'))`]);
    await waitForOutput(killed, /listening/);
    await stop(killed, { signal: 'SIGKILL' });
    expect(existsSync(path.join(dir, OWNER_SOCKET))).toBe(true);

    // A restart keeps the data (and its keys: no hint this time).
    const again = await startServer('src/server.ts', env);
    servers.push(again);
    let out2 = '';
    again.child.stdout!.on('data', (chunk) => (out2 += chunk)); // all of it: it waited in the pipe
    const res2 = await fetch(`${again.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
    expect(res2.status).toBe(200);
    expect(out2).not.toMatch(/API key/);
    expect(await stop(again.child, { signal: 'SIGINT' })).toBe(0);
  }, 120_000);

  it('at a terminal, prints a development key once on a fresh DATA_DIR', async () => {
    const dataDir = await scratchDir('as-server-tty-');
    const port = await freePort();
    // script(1) gives the server a pseudo-terminal as stdout, as a developer's shell does.
    const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !CONFIG_VARIABLES.includes(name)));
    const env = { ...inherited, DATA_DIR: dataDir, PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_SECONDS: '0' };
    const tty = spawn('script', ['-qefc', `exec ${process.execPath} --import tsx src/server.ts`, '/dev/null'], { cwd: projectRoot, env });
    try {
      const out = (await waitForOutput(tty, /Docs: +\S+\/docs/, 90_000)).replaceAll('\r', '');
      const key = /^ {2}(ask_[0-9A-Za-z]{36})$/m.exec(out)?.[1];
      expect(out).toMatch(/Created a development account \(free plan\) and its API key\. The key is shown only this once:/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      // The server is script's child (exec): SIGTERM to it, and script exits with its code.
      const exited = new Promise((resolve) => tty.once('exit', resolve));
      process.kill(Number(execFileSync('pgrep', ['-P', String(tty.pid)], { encoding: 'utf8' }).trim()), 'SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      tty.kill('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

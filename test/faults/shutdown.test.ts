import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer, type Server } from '../helpers/processes.js';
import { openDatabase } from '../../src/db/database.js';
import { createTestDatabase } from '../helpers/testDatabase.js';

it('on SIGTERM under load, finishes what it accepted, loses nothing, and exits 0', async () => {
  const db = await createTestDatabase();
  const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_SECONDS: '1' });
  const key = await createKey(db.env, { plan: 'business' });

  const send = (i: number) =>
    fetch(`${server.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `load ${i}`, categoryId: 1 }),
    }).then(
      (r) => String(r.status),
      (err: Error & { cause?: { code?: string } }) => `error ${err.cause?.code ?? err.message}`,
    );

  const inFlight = Array.from({ length: 60 }, (_, i) => send(i));
  await new Promise((r) => setTimeout(r, 30));
  const exit = server.stop(); // SIGTERM
  const statuses = await Promise.all(inFlight);
  expect(await exit).toBe(0);

  // The drain keeps serving: every request sent around the signal is answered, and created.
  const counts = statuses.reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
  expect(counts).toEqual({ 201: 60 });

  // Nothing lost, nothing invented: the database holds exactly the pets reported created.
  const check = await openDatabase({ databaseUrl: db.env.DATABASE_URL, dataDir: db.env.DATA_DIR ?? '', poolMax: 1, onIdleError: () => {} });
  const { rows } = await check.pool.query(`SELECT count(*) AS n FROM pets WHERE name LIKE 'load %'`);
  await check.close();
  expect(rows[0].n).toBe(60);
  await db.drop();
}, 120_000);

describe('stdout that takes nothing more', () => {
  const drainSeconds = 1;
  const exited = (server: Server) =>
    new Promise<number | null>((resolve) => (server.child.exitCode !== null ? resolve(server.child.exitCode) : server.child.once('exit', (code) => resolve(code))));
  /** `count` requests answered 404 (outside the API: no rate limit), each logged in a line of about 1.3 KB (its URL), a few at a time. */
  async function logLines(server: Server, count: number): Promise<Record<string, number>> {
    const statuses: number[] = [];
    for (let i = 0; i < count; i += 20) {
      const batch = Array.from({ length: Math.min(20, count - i) }, (_, j) => fetch(`${server.baseUrl}/nothing-here?padding=${String(i + j).padStart(1200, '0')}`).then((r) => r.status));
      statuses.push(...(await Promise.all(batch)));
    }
    return statuses.reduce<Record<string, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {});
  }

  it('full (nobody reads it): the server still answers, and SIGTERM ends it (exit 0) within the drain plus 5 s, the lines it could not write dropped', async () => {
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_SECONDS: String(drainSeconds) });
    onTestFinished(() => void server.stop());
    server.child.stdout!.pause(); // the pipe fills: about 64 KiB in the kernel and what Node buffers
    expect(await logLines(server, 300)).toEqual({ 404: 300 }); // about 400 KB of lines
    expect((await fetch(`${server.baseUrl}/healthz`)).status).toBe(200);

    const exit = exited(server);
    server.child.kill('SIGTERM');
    const code = await Promise.race([exit, sleep((drainSeconds + 5) * 1000).then(() => 'still running')]);
    expect(code).toBe(0);
    let written = '';
    server.child.stdout!.on('data', (chunk: Buffer) => (written += chunk.toString()));
    await new Promise((resolve) => server.child.stdout!.once('close', resolve));
    const requestLines = written.split('\n').filter((line) => line.includes('"msg":"request"')).length;
    expect(requestLines).toBeGreaterThan(0);
    expect(requestLines).toBeLessThan(300);
  }, 60_000);

  it('gone (its reader closed the pipe): the server stops by itself at its next line (exit 0), within the drain plus 5 s', async () => {
    const db = await createTestDatabase();
    onTestFinished(() => db.drop());
    const server = await startServer('src/server.ts', { ...db.env, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_SECONDS: String(drainSeconds) });
    onTestFinished(() => void server.stop());
    server.child.stdout!.destroy(); // EPIPE for the server's next write
    const exit = exited(server);
    expect(await logLines(server, 1)).toEqual({ 404: 1 }); // a line, written within a second
    const code = await Promise.race([exit, sleep((drainSeconds + 1 + 5) * 1000).then(() => 'still running')]);
    expect(code).toBe(0);
  }, 60_000);
});

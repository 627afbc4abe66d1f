import { expect, it } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer } from '../helpers/processes.js';
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

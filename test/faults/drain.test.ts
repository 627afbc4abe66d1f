import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiKeysRepository } from '../../src/auth/apiKeys.js';
import { openDatabase } from '../../src/db/database.js';
import { REDIS_URL, uniquePrefix, cleanupSharedRedis } from '../ratelimit/helpers.js';
import { freePort, spawnScript, waitUntilAnswers } from '../helpers/run.js';
import { countOutcomes, getOnce } from '../helpers/oneShot.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

let db: ServerDatabase;
let key: string;
beforeAll(async () => {
  db = await createServerDatabase('drain');
  const database = await openDatabase({ databaseUrl: db.env.DATABASE_URL, dataDir: '', poolMax: 1, onIdleError: () => {} });
  key = (await apiKeysRepository(database.pool).create({ plan: 'enterprise', perMinute: 100_000, perDay: 1_000_000 })).key;
  await database.close();
});
afterAll(async () => {
  await cleanupSharedRedis();
  await db?.drop();
});

describe.each([
  ['one process', {}],
  ['WORKERS=2', { WORKERS: '2' }],
])('SIGTERM with 80 requests in the listen queue (%s)', (_name, extra) => {
  it('answers all 80, fails readiness during the drain, and exits 0', async () => {
    const port = await freePort();
    const server = spawnScript('src/server.ts', {
      ...db.env,
      REDIS_URL,
      REDIS_PREFIX: uniquePrefix(),
      PORT: String(port),
      LOG_LEVEL: 'warn',
      SHUTDOWN_DRAIN_SECONDS: '2',
      ...extra,
    }, { detached: true });
    const exit = new Promise<number | null>((resolve) => server.once('exit', resolve));
    await waitUntilAnswers(`http://127.0.0.1:${port}/readyz`);
    expect((await getOnce(port, '/v1/pets?limit=1', key)).status).toBe(200);

    // Freeze every process of the server, so new connections wait in the kernel's listen queue.
    process.kill(-server.pid!, 'SIGSTOP');
    const queued = Array.from({ length: 80 }, () => getOnce(port, '/v1/pets?limit=1', key));
    await new Promise((r) => setTimeout(r, 300));
    process.kill(server.pid!, 'SIGTERM');
    process.kill(-server.pid!, 'SIGCONT');

    const readiness = await getOnce(port, '/readyz');
    const answers = await Promise.all(queued);
    expect(await exit).toBe(0);

    const counts = countOutcomes(answers);
    console.log(`${_name}: ${JSON.stringify(counts)}; readiness during the drain: ${readiness.status}`);
    expect(counts).toEqual({ 200: 80 });
    for (const a of answers) expect(a.connection).toBe('close');
    expect(readiness.status).toBe(503);
    expect(JSON.parse(readiness.body!)).toEqual({ code: 'service_unavailable', message: expect.any(String), status: 503 });
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createKey } from '../helpers/apiKeys.js';
import { startServer } from '../helpers/processes.js';
import { countOutcomes, getOnce } from '../helpers/oneShot.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';

let db: ServerDatabase;
let key: string;
beforeAll(async () => {
  db = await createServerDatabase('drain');
  key = await createKey(db.env, { plan: 'enterprise', perMinute: 100_000, perDay: 1_000_000 });
});
afterAll(() => db?.drop());

describe('SIGTERM with 80 requests in the listen queue', () => {
  it('answers all 80, fails readiness during the drain, and exits 0', async () => {
    const { child: server, baseUrl } = await startServer(
      'src/server.ts',
      { ...db.env, LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_SECONDS: '2' },
      { readyPath: '/readyz', stdout: 'ignore', detached: true },
    );
    onTestFinished(() => {
      if (server.exitCode !== null || server.signalCode !== null) return;
      process.kill(-server.pid!, 'SIGCONT');
      process.kill(-server.pid!, 'SIGKILL');
    });
    const port = Number(new URL(baseUrl).port);
    const exit = new Promise<number | null>((resolve) => server.once('exit', resolve));
    expect((await getOnce(port, '/v1/pets?limit=1', key)).status).toBe(200);

    // Freeze the server, so new connections wait in the kernel's listen queue.
    process.kill(-server.pid!, 'SIGSTOP');
    const queued = Array.from({ length: 80 }, () => getOnce(port, '/v1/pets?limit=1', key));
    await new Promise((r) => setTimeout(r, 300));
    process.kill(server.pid!, 'SIGTERM');
    process.kill(-server.pid!, 'SIGCONT');

    const readiness = await getOnce(port, '/readyz');
    const answers = await Promise.all(queued);
    expect(await exit).toBe(0);

    const counts = countOutcomes(answers);
    console.log(`${JSON.stringify(counts)}; readiness during the drain: ${readiness.status}`);
    expect(counts).toEqual({ 200: 80 });
    for (const a of answers) expect(a.connection).toBe('close');
    expect(readiness.status).toBe(503);
    expect(JSON.parse(readiness.body!)).toEqual({ code: 'service_unavailable', message: expect.any(String), status: 503 });
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { answered } from '../helpers/typedClient.js';

/** Database faults need a real Postgres server to break, whichever backend the rest of the suite uses. */
let db: ServerDatabase;
let server: TestServer;

async function terminateConnections() {
  await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
}

beforeAll(async () => {
  db = await createServerDatabase('faults');
  server = await startTestServer({}, { db });
});

afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe('database faults', () => {
  it('survives its connections being killed and serves again at once', async () => {
    expect((await answered(server.api.GET('/pets'))).status).toBe(200);
    await terminateConnections();
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await answered(server.api.POST('/pets', { body: { name: `after kill ${i}`, categoryId: 1 } }))).status);
    for (const s of statuses) expect([201, 503]).toContain(s);
    expect(statuses.at(-1)).toBe(201);
  });

  it('answers 503 with Retry-After while the database refuses connections, then recovers without a restart', async () => {
    const created: number[] = [];
    const ok = await answered(server.api.POST('/pets', { body: { name: 'before', categoryId: 1 } }));
    created.push(ok.body.id!);

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await terminateConnections();

    const started = Date.now();
    const failed = await answered(server.api.POST('/pets', { body: { name: 'during', categoryId: 1 } }));
    expect(failed.status).toBe(503);
    expect(failed.body.code).toBe('service_unavailable');
    expect(Number(failed.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(failed.text).not.toMatch(/allow connections|postgres|5432/i);
    expect(Date.now() - started).toBeLessThan(10_000); // bounded, not a hang (connection timeout is 3 s)
    const ready = await fetch(`${server.baseUrl}/readyz`);
    expect(ready.status).toBe(503);

    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    const after = await answered(server.api.POST('/pets', { body: { name: 'after', categoryId: 1 } }));
    expect(after.status).toBe(201);
    created.push(after.body.id!);
    expect((await fetch(`${server.baseUrl}/readyz`)).status).toBe(200);

    // What was reported created is there; what failed is not.
    const names = (await server.api.GET('/pets', { params: { query: { limit: 100 } } })).data!.map((p) => p.name);
    expect(names).toContain('before');
    expect(names).toContain('after');
    expect(names).not.toContain('during');
  });
});

import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../scripts/lib/poll.js';
import { withoutPostgresServer } from '../helpers/services.js';
import { logCollector } from '../helpers/logCollector.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let db: ServerDatabase;
let server: TestServer;
const logs = logCollector();
beforeAll(async () => {
  if (withoutPostgresServer()) return;
  db = await createServerDatabase('logging');
  server = await startTestServer({ LOG_LEVEL: 'info' }, { db, logStream: logs.stream });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

describe.skipIf(withoutPostgresServer())('what an operator reads', () => {
  it('logs a client that hangs up mid-body as a client that went away, not as a database outage', async () => {
    const socket = net.connect(Number(new URL(server.baseUrl).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
    );
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect(logs.lines.filter((l) => /database unavailable/.test(l.msg))).toEqual([]);
    expect(logs.lines.filter((l) => l.msg === 'client closed the connection')).toHaveLength(1);
  });

  it('logs an idle connection killed by the server as one short line, without the connection\'s client or its parameters', async () => {
    // An idle pooled connection exists after any query.
    expect((await server.request('/v1/pets?limit=1')).status).toBe(200);
    const before = logs.lines.length;
    const killed = await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db.name]);
    expect(killed.rowCount).toBeGreaterThan(0);
    const lostLines = () => logs.lines.slice(before).filter((l) => l.msg === 'idle database connection lost');
    // One line per killed connection, as each one's socket learns of it.
    expect(await waitFor(() => lostLines().length === killed.rowCount, 15_000, 20)).toBe(true);
    const lost = lostLines();
    for (const line of lost) {
      const err = line.err as { code?: string; client?: unknown };
      expect(err.code).toBe('57P01'); // admin_shutdown: what Postgres says
      expect(err.client).toBeUndefined();
      expect(JSON.stringify(line)).not.toMatch(/connectionParameters|secretKey|processID/);
    }
    // The pool replaces what it lost: the next request is answered.
    expect((await server.request('/v1/pets?limit=1')).status).toBe(200);
  });

  it('writes one outage line for a burst of failures, not one per request', async () => {
    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
    await db.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [db.name]);
    const statuses = [];
    for (let i = 0; i < 40; i++) statuses.push((await server.request('/v1/pets', { body: { name: 'during', categoryId: 1 } })).status);
    await db.admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
    expect(statuses).toEqual(Array(40).fill(503));
    const outage = logs.lines.filter((l) => /database unavailable/.test(l.msg));
    expect(outage).toHaveLength(1);
    expect(outage[0]!.level).toBe(40);
  });
});

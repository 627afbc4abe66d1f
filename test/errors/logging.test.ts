import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { waitFor } from '../helpers/poll.js';
import { DATABASE_UNAVAILABLE } from '../../src/errors/toApiError.js';
import { manualClock } from '../helpers/clock.js';
import { logCollector, type LogLine } from '../helpers/logCollector.js';
import { createServerDatabase, type ServerDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let db: ServerDatabase;
let server: TestServer;
const logs = logCollector();
beforeAll(async () => {
  db = await createServerDatabase('logging');
  server = await startTestServer({ LOG_LEVEL: 'info' }, { db, logStream: logs.stream });
});
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

const killConnections = (database: ServerDatabase) =>
  database.admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database.name]);

describe('what an operator reads', () => {
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

  it("logs idle connections killed by the server as one line with a count, without the connection's client or its parameters", async () => {
    // An idle pooled connection exists after any query.
    expect((await server.request('/v1/pets?limit=1')).status).toBe(200);
    const pool = server.app.database.pool;
    expect(await waitFor(() => pool.idleCount === pool.totalCount, 5_000, 5)).toBe(true);
    const pooled = pool.totalCount;
    let removed = 0;
    const onRemove = () => void removed++;
    pool.on('remove', onRemove);
    onTestFinished(() => void pool.off('remove', onRemove));
    const before = logs.lines.length;
    const killed = await killConnections(db);
    expect(killed.rowCount).toBeGreaterThan(0);
    const lostLines = () => logs.lines.slice(before).filter((l) => l.msg === 'idle database connection lost');
    // The pool drops each lost connection as its socket learns of it. (Counted as removals, not as an empty
    // pool: the service's own periodic reads, the key index's and the webhook workers', may open a new one meanwhile.)
    expect(await waitFor(() => removed >= pooled && lostLines().length > 0, 15_000, 20)).toBe(true);
    server.app.faults.flush(); // what the next line (or the recovery) would write
    const lost = lostLines();
    expect(lost[0]).toMatchObject({ level: 40, count: 1, code: '57P01' }); // admin_shutdown: what Postgres says
    expect(lost.reduce((n, l) => n + (l.count as number), 0)).toBeLessThanOrEqual(killed.rowCount!);
    expect(lost.length).toBeLessThanOrEqual(2);
    for (const line of lost) expect(JSON.stringify(line)).not.toMatch(/connectionParameters|secretKey|processID|"client"|"stack"/);
    // The pool replaces what it lost: the next request is answered.
    expect((await server.request('/v1/pets?limit=1')).status).toBe(200);
  });
});

describe('a 10 s database outage at 60 requests a second', () => {
  const clock = manualClock();
  const outageLogs = logCollector();
  let outageDb: ServerDatabase;
  let s: TestServer;
  beforeAll(async () => {
    outageDb = await createServerDatabase('outagelogs');
    s = await startTestServer({ LOG_LEVEL: 'info' }, { db: outageDb, clock: clock.now, logStream: outageLogs.stream });
  });
  afterAll(async () => {
    await outageDb?.admin.query(`ALTER DATABASE ${outageDb.name} ALLOW_CONNECTIONS true`);
    await s?.close();
    await outageDb?.drop();
  });

  it('writes one warning per fault, each line counting what it stands for, not one per failed request', async () => {
    const seen = await s.createKey('business'); // verified and cached before the outage
    const fresh = await s.createKey('business'); // first used during it: only the database can verify it
    const get = (key: string) => fetch(`${s.baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);
    expect(await get(seen)).toBe(200);
    // The index of issued keys refreshes on a real-time timer, and may fail as soon as connections are refused.
    const beforeOutage = outageLogs.lines.length;
    const isIndexLine = (l: LogLine) => /^reading API key changes failed/.test(l.msg);

    await outageDb.admin.query(`ALTER DATABASE ${outageDb.name} ALLOW_CONNECTIONS false`);
    await killConnections(outageDb);
    expect(await waitFor(() => s.app.database.pool.totalCount === 0, 5000, 20)).toBe(true);
    const from = outageLogs.lines.length;

    // Ten seconds of the service's time: each second 60 requests (half with each key) and, every other second, a readiness probe.
    const statuses: number[] = [];
    const probes: number[] = [];
    for (let second = 0; second < 10; second++) {
      statuses.push(...(await Promise.all(Array.from({ length: 60 }, (_, i) => get(i % 2 ? seen : fresh)))));
      if (second % 2 === 0) probes.push((await fetch(`${s.baseUrl}/readyz`)).status);
      clock.advance(1000);
    }
    // Its failure is one line too, written when it first failed: perhaps before the pool had drained.
    expect(await waitFor(() => outageLogs.lines.slice(beforeOutage).some(isIndexLine), 5000)).toBe(true);
    expect(outageLogs.lines.slice(beforeOutage).filter(isIndexLine)).toHaveLength(1);
    const during = outageLogs.lines.slice(from).filter((l) => l.level >= 40 && !isIndexLine(l));

    await outageDb.admin.query(`ALTER DATABASE ${outageDb.name} ALLOW_CONNECTIONS true`);
    expect(await waitFor(async () => (await get(seen)) === 200, 10_000, 200)).toBe(true);
    // The first new connection writes the counts still pending.
    const all = outageLogs.lines.slice(from).filter((l) => l.level >= 40);

    expect(statuses).toEqual(Array(600).fill(503));
    expect(probes).toEqual(Array(5).fill(503));
    const messages = during.map((l) => l.msg).sort();
    console.log(`600 × 503 and 5 failed probes in 10 s: ${during.length} warning lines during the outage, ${all.length} with the counts written on recovery:\n${messages.join('\n')}`);
    expect(messages).toEqual(
      [
        'answering 503 service_unavailable: The service is temporarily unavailable. Retry later.', // keys only the database could verify
        DATABASE_UNAVAILABLE, // requests whose key was cached
        'readiness check failed: database unreachable',
        'verifying API keys failed: keys answer 503 until it works',
      ].sort(),
    );
    // Every 503 answered is in the counts, once: the 600 requests and the 5 probes; and the 5 probes' cause.
    const counted = (msg: RegExp) => all.filter((l: LogLine) => msg.test(l.msg)).reduce((n, l) => n + ((l.count as number | undefined) ?? 0), 0);
    expect(counted(/^(answering 503 service_unavailable|database unavailable)/)).toBe(600 + 5);
    expect(counted(/^readiness check failed/)).toBe(5);
    for (const line of all) expect(JSON.stringify(line)).not.toMatch(/"stack"/);
  });
});

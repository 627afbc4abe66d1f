import net from 'node:net';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';
import { openDatabase } from '../../src/db/database.js';
import { watchStatements } from '../../src/db/statements.js';
import { createTestDatabase } from '../helpers/testDatabase.js';

/** A "database" that lets clients connect and then never answers a statement: a hung server, a black-holed network. */
async function silentPostgres() {
  const sockets = new Set<net.Socket>();
  let statementArrived!: () => void;
  const statement = new Promise<void>((resolve) => (statementArrived = resolve));
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('data', () => {
      // AuthenticationOk, then ReadyForQuery (idle): connected. Whatever follows is never answered.
      socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5a, 0, 0, 0, 5, 0x49]));
      socket.once('data', () => statementArrived());
    });
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    /** Resolves once a statement has reached it. */
    statement,
    close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
  };
}

describe('statements the database never answers', () => {
  it('end their connection once unanswered for the timeout, with an error that answers 503', async () => {
    const silent = await silentPostgres();
    let now = 0;
    const pool = new pg.Pool({ host: '127.0.0.1', port: silent.port, user: 'x', database: 'x', max: 2 });
    pool.on('error', () => {});
    const statements = watchStatements(pool, { timeoutMs: 10_000, now: () => now });
    try {
      let failure: unknown;
      const query = pool.query('SELECT 1').catch((err: unknown) => (failure = err));
      await silent.statement;
      now = 9_999;
      statements.check();
      await new Promise((resolve) => setImmediate(resolve));
      expect(failure, 'not yet: 1 ms before the timeout').toBeUndefined();
      now = 10_000;
      statements.check();
      await query;
      expect(isDatabaseUnavailable(failure)).toBe(true);
      expect(pool.totalCount, 'the connection is gone from the pool').toBe(0);
    } finally {
      statements.stop();
      await pool.end();
      await silent.close();
    }
  });
});

describe('statements the database answers', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('are each timed once, for the observer, successes and failures alike', async () => {
    const testDb = await createTestDatabase();
    closers.push(() => testDb.drop());
    const env = testDb.env;
    const db = await openDatabase({ databaseUrl: env.DATABASE_URL, dataDir: env.DATA_DIR ?? '', poolMax: 2, onIdleError: () => {} });
    closers.push(() => db.close());
    const seen: Array<{ sql: string; failed: boolean; ms: number }> = [];
    db.statements.observe<string>({
      start: (sql) => sql,
      end: (ms, failed, _error, sql) => seen.push({ sql: sql!, failed, ms }),
    });
    await db.pool.query('SELECT 1 AS one');
    await expect(db.pool.query('SELECT * FROM no_such_table')).rejects.toThrow(/no_such_table/);
    const client = await db.pool.connect();
    await client.query('SELECT $1::int AS two', [2]);
    client.release();
    expect(seen.map(({ sql, failed }) => [sql, failed])).toEqual([
      ['SELECT 1 AS one', false],
      ['SELECT * FROM no_such_table', true],
      ['SELECT $1::int AS two', false],
    ]);
    for (const s of seen) expect(s.ms).toBeGreaterThanOrEqual(0);
  });
});

import { cp, rm } from 'node:fs/promises';
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { embeddedConnection, isHeld, socketPath, startEmbedded, type EmbeddedThread } from '../../src/db/embedded.js';
import { scratchDir } from '../helpers/scratchDir.js';
import { cstring, int16, int32, message } from '../helpers/pgWire.js';

/**
 * The embedded store's bridge: many pg connections on PGlite's one session. Each connection's
 * statements must run whole (electric-sql/pglite#1046: Parse/Bind of two connections
 * interleaved), and a transaction must keep the session to its connection until it ends.
 */
describe('the embedded store, shared by several pg connections', () => {
  let dir: string;
  let store: EmbeddedThread;
  const pools: pg.Pool[] = [];
  const newPool = (max: number) => {
    const pool = new pg.Pool({ ...embeddedConnection(dir), max, connectionTimeoutMillis: 5000, query_timeout: 10_000 });
    pools.push(pool);
    return pool;
  };

  beforeAll(async () => {
    dir = await scratchDir('as-embedded-');
    const template = inject('template');
    // A migrated store when the suite runs on PGlite; an empty one (initdb) otherwise.
    if (template.kind === 'embedded') await cp(template.dir, dir, { recursive: true });
    store = await startEmbedded(dir);
    await newPool(1).query('CREATE TABLE IF NOT EXISTS bridge_rows (n int)');
  });

  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    await store?.close();
    expect(await isHeld(dir)).toBe(false);
    await rm(dir, { recursive: true, force: true });
  });

  it('answers each of ten connections its own statement, with concurrent parameterized queries of different shapes', async () => {
    const pool = newPool(10);
    const runs = Array.from({ length: 300 }, (_, i) =>
      i % 2
        ? pool.query<{ a: number }>('SELECT $1::int AS a', [i]).then((r) => expect(r.rows).toEqual([{ a: i }]))
        : pool
            .query<{ b: string; c: string }>('SELECT $1::text AS b, $2::text AS c', [`b${i}`, `c${i}`])
            .then((r) => expect(r.rows).toEqual([{ b: `b${i}`, c: `c${i}` }])),
    );
    await Promise.all(runs);
    expect(pool.totalCount).toBeGreaterThan(1);
  });

  it("runs a connection's statement whole even when its messages arrive apart, another connection's in between", async () => {
    const raw = await rawConnection(socketPath(dir));
    try {
      // Parse alone: without its Sync nothing runs yet, and nothing waits for it.
      raw.send(message('P', cstring(''), cstring('SELECT $1::int AS a'), int16(0)));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const other = await newPool(1).query('SELECT $1::text AS b, $2::text AS c', ['x', 'y']);
      expect(other.rows).toEqual([{ b: 'x', c: 'y' }]);
      const bind = message('B', cstring(''), cstring(''), int16(0), int16(1), int32(1), Buffer.from('7'), int16(0));
      raw.send(Buffer.concat([bind, message('D', Buffer.from('P'), cstring('')), message('E', cstring(''), int32(0)), message('S')]));
      const answer = await raw.untilReady();
      expect(answer.filter((m) => m.type !== 'Z').map((m) => m.type)).toEqual(['1', '2', 'T', 'D', 'C']);
      const row = answer.find((m) => m.type === 'D')!.body;
      expect(row.subarray(6).toString()).toBe('7');
    } finally {
      raw.close();
    }
  });

  it('keeps the session to a transaction until it ends: another connection neither sees nor interleaves with it', async () => {
    const pool = newPool(4);
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      await tx.query('INSERT INTO bridge_rows VALUES (1)');
      let counted: number | undefined;
      const other = pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bridge_rows').then((r) => (counted = r.rows[0]!.n));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(counted, 'waits while the transaction is open').toBeUndefined();
      await tx.query('INSERT INTO bridge_rows VALUES (2)');
      await tx.query('ROLLBACK');
      await other;
      expect(counted).toBe(0);
    } finally {
      tx.release();
    }
  });

  it('runs 40 concurrent writes, half in transactions of several statements, on a pool of 10 without a failure', async () => {
    const pool = newPool(10);
    const before = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bridge_rows')).rows[0]!.n;
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        if (i % 2) return pool.query('INSERT INTO bridge_rows VALUES ($1)', [i]);
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          await client.query('INSERT INTO bridge_rows VALUES ($1)', [i]);
          const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM bridge_rows WHERE n = $1', [i]);
          expect(rows).toEqual([{ n: 1 }]);
          await client.query(i % 4 ? 'COMMIT' : 'ROLLBACK');
        } finally {
          client.release();
        }
      }),
    );
    // 20 plain inserts, 10 committed transactions, 10 rolled back.
    expect((await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bridge_rows')).rows[0]!.n - before).toBe(30);
    await pool.query('DELETE FROM bridge_rows');
  });

  it('rolls back the transaction of a connection that goes away in it, and serves the others', async () => {
    const pool = newPool(2);
    const client = new pg.Client({ ...embeddedConnection(dir) });
    await client.connect();
    client.on('error', () => {});
    await client.query('BEGIN');
    await client.query('INSERT INTO bridge_rows VALUES (3)');
    const waiting = pool.query<{ n: number }>('SELECT count(*)::int AS n FROM bridge_rows');
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    expect((await waiting).rows).toEqual([{ n: 0 }]);
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
  });

  it('keeps a connection usable after a statement fails, and the other connections too', async () => {
    const pool = newPool(3);
    const failing = Array.from({ length: 10 }, () => pool.query('SELECT $1::int / 0 AS x', [1]).then(() => 'ok', (err: Error) => err.message));
    const fine = Array.from({ length: 10 }, (_, i) => pool.query<{ i: number }>('SELECT $1::int AS i', [i]));
    expect(new Set(await Promise.all(failing))).toEqual(new Set(['division by zero']));
    expect((await Promise.all(fine)).map((r) => r.rows[0]!.i)).toEqual([...Array(10).keys()]);
    await expect(pool.query('SELEC 1')).rejects.toThrow(/syntax error/);
    expect((await pool.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  });

  it('refuses a second owner of the same data directory', async () => {
    await expect(startEmbedded(dir)).rejects.toThrow(/in use by another process/);
  });
});

/** A connected, started-up protocol-3 session on the socket at `path`. */
async function rawConnection(path: string) {
  const socket = net.connect(path);
  let buffered = Buffer.alloc(0);
  let waiter: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    waiter?.();
  });
  /** The backend's messages up to and including the next ReadyForQuery. */
  const untilReady = async () => {
    const messages: Array<{ type: string; body: Buffer }> = [];
    for (;;) {
      while (buffered.length >= 5 && buffered.length >= 1 + buffered.readInt32BE(1)) {
        const length = buffered.readInt32BE(1);
        const m = { type: String.fromCharCode(buffered[0]!), body: buffered.subarray(5, 1 + length) };
        buffered = buffered.subarray(1 + length);
        messages.push(m);
        if (m.type === 'Z') return messages;
      }
      await new Promise<void>((resolve) => (waiter = resolve));
    }
  };
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const startup = Buffer.concat([int32(196608), cstring('user'), cstring('postgres'), cstring('database'), cstring('postgres'), Buffer.from([0])]);
  socket.write(Buffer.concat([int32(startup.length + 4), startup]));
  await untilReady();
  return { send: (data: Buffer) => socket.write(data), untilReady, close: () => socket.destroy() };
}

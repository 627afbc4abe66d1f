import net from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPool } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';

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

afterEach(() => {
  vi.useRealTimers();
});

describe('a statement the database never answers', () => {
  it('fails within a second of 5 s after the server-side statement timeout, with an error that answers 503, and its connection leaves the pool', async () => {
    const silent = await silentPostgres();
    const pool = createPool({
      databaseUrl: undefined,
      connection: { host: '127.0.0.1', port: silent.port, user: 'x', database: 'x' },
      poolMax: 2,
      serverTimeouts: { statementTimeoutMs: 1000, lockTimeoutMs: 500 },
    });
    try {
      let failure: unknown;
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
      const query = pool.query('SELECT 1').catch((err: unknown) => (failure = err));
      await silent.statement;
      await vi.advanceTimersByTimeAsync(6_000);
      expect(failure, 'not yet: at the bound').toBeUndefined();
      await vi.advanceTimersByTimeAsync(1_000); // the next sweep
      await query;
      expect(isDatabaseUnavailable(failure)).toBe(true);
      expect(pool.totalCount, 'the connection is gone from the pool').toBe(0);
    } finally {
      vi.useRealTimers();
      await pool.end();
      await silent.close();
    }
  });
});

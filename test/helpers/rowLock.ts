import pg from 'pg';
import { waitFor } from './poll.js';
import type { TestServer } from './testServer.js';

/**
 * Holds a pet's row lock in a transaction of its own: requests sent meanwhile queue on the row
 * in the order they arrive, so a race can be run with a chosen first in line. `queued(n)` waits
 * until n other sessions of this test's database are blocked on a lock; `release()` ends the
 * transaction and lets them go, each waiting on the one before it.
 */
export async function holdPetRow(server: TestServer, petId: number) {
  const client = new pg.Client({ connectionString: server.db.env.DATABASE_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM pets WHERE id = $1 FOR UPDATE', [petId]);
  // This session is in a transaction, where pg_stat_activity is read once and kept: a backend that connected since
  // (a request on a pool connection opened after the first look) would never be seen. Cleared before each look.
  const blocked = async () =>
    (await client.query('SELECT pg_stat_clear_snapshot()')) &&
    (
      await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
      )
    ).rows[0]!.n;
  return {
    async queued(n: number): Promise<void> {
      // A generous bound, to tell a request that never reached the row from a slow machine.
      if (await waitFor(async () => (await blocked()) >= n, 30_000, 20)) return;
      await client.end(); // the lock goes with it, so the test's database can be dropped
      throw new Error(`${n} sessions never queued on pet ${petId}`);
    },
    async release(): Promise<void> {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

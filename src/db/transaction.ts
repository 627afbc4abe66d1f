import type pg from 'pg';

/**
 * pg-pool takes its own 'error' listener off a client it hands out: a connection that dies between
 * statements (its backend terminated) would emit 'error' to nobody, an uncaught exception that ends
 * the process. The next statement fails with that error anyway, so the listener has nothing to do.
 */
const heardElsewhere = () => {};

/**
 * Runs fn in a transaction on one connection: COMMIT if it resolves, ROLLBACK if it throws. `begin`: what
 * opens it, when a statement without parameters should go in the same round trip (`BEGIN; SELECT …`).
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, begin = 'BEGIN'): Promise<T> {
  const client = await pool.connect();
  client.on('error', heardElsewhere);
  try {
    await client.query(begin);
    const result = await fn(client);
    await client.query('COMMIT');
    client.off('error', heardElsewhere);
    client.release();
    return result;
  } catch (err) {
    // A connection that failed (or was ended by the pool's watch on hung statements, database.ts)
    // is discarded rather than reused: its ROLLBACK fails at once.
    const broken = await client.query('ROLLBACK').then(() => undefined, (e: Error) => e);
    client.off('error', heardElsewhere);
    client.release(broken);
    throw err;
  }
}

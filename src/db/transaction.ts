import type pg from 'pg';

/** Runs fn in a transaction on one connection: COMMIT if it resolves, ROLLBACK if it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    client.release();
    return result;
  } catch (err) {
    // A connection that failed, or still runs a statement past query_timeout, is discarded (which ends
    // its transaction) rather than reused; a ROLLBACK would only wait behind that statement.
    const broken = (err as Error).message === 'Query read timeout' ? (err as Error) : await client.query('ROLLBACK').then(() => undefined, (e: Error) => e);
    client.release(broken);
    throw err;
  }
}

import type pg from 'pg';

/** Runs fn in a transaction on one connection: COMMIT if it resolves, ROLLBACK if it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {}); // the connection may be the thing that failed
    throw err;
  } finally {
    client.release();
  }
}

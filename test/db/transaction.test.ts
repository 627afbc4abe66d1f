import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../src/db/transaction.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';

let db: TestDatabase;
let pool: pg.Pool;
let admin: pg.Client;
beforeAll(async () => {
  db = await createTestDatabase();
  pool = new pg.Pool({ connectionString: db.env.DATABASE_URL, max: 2 });
  pool.on('error', () => {});
  admin = new pg.Client({ connectionString: db.env.DATABASE_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await pool?.end();
  await db?.drop();
});

describe('withTransaction', () => {
  // Unheard, the client's 'error' is an uncaught exception: vitest fails the run on it, and a server process exits.
  it('rejects, and leaves nothing uncaught, when its connection dies between two statements (its backend terminated)', async () => {
    const done = withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const ended = new Promise((resolve) => client.once('end', resolve));
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await ended; // the connection is gone, with no statement running on it
      await client.query('SELECT 1');
    });
    await expect(done).rejects.toThrow();
    // The pool discarded the dead connection and still serves.
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

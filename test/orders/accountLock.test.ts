import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { createPet, placeOrder } from '../helpers/pets.js';
import { waitFor } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * Placements of one account take its row's lock (FOR NO KEY UPDATE) until they commit. Whom that
 * holds up: that account's next placement, and nothing of another account's. A request that
 * waited where it should not would wait out the lock timeout (1 s here) and answer 503.
 */
let server: TestServer;
let a: { id: number; key: string };
beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: 'error', DB_LOCK_TIMEOUT_MS: '1000' });
  const created = await server.app.accounts.createAccount({ plan: 'business' });
  a = { id: created.accountId, key: created.key.secret };
});
afterAll(() => server?.close());

/** An open transaction holding `accountId`'s placement lock, as a placement that has not committed yet does. */
async function holdPlacementLock(accountId: number) {
  const client = new pg.Client({ connectionString: server.db.env.DATABASE_URL });
  await client.connect();
  await client.query('BEGIN');
  // The lock place_order (migration 018) takes first.
  await client.query('SELECT FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [accountId]);
  return {
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/** An account with the given id (as accounts beyond 2^31 will have) and a key of it. */
async function accountWithId(id: number): Promise<string> {
  await server.app.database.pool.query(`INSERT INTO accounts (id, plan) OVERRIDING SYSTEM VALUE VALUES ($1, 'business')`, [id]);
  return (await server.app.accounts.createKey(id, { name: 'far', scopes: SCOPES }, false))!.secret;
}

const blocked = async () =>
  (
    await server.app.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
    )
  ).rows[0]!.n;

describe("the account's placement lock", () => {
  it("holds up the account's next placement until the first commits", async () => {
    const petId = (await createPet(server, { name: 'Queued', key: a.key })).id;
    const held = await holdPlacementLock(a.id);
    const placing = placeOrder(server, petId, a.key);
    const queued = await waitFor(async () => (await blocked()) >= 1, 30_000, 20);
    await held.release();
    expect(queued).toBe(true);
    expect((await placing).status).toBe(201);
  });

  it('does not hold up an account whose id is 2^31 apart (the advisory key it replaced was the id modulo 2^31)', async () => {
    const far = await accountWithId(a.id + 2 ** 31);
    const petId = (await createPet(server, { name: 'Far', key: far })).id;
    const held = await holdPlacementLock(a.id);
    try {
      const res = await placeOrder(server, petId, far);
      expect([res.status, res.body.petId]).toEqual([201, petId]);
    } finally {
      await held.release();
    }
  });

  it("does not hold up rows that name the account: its pet created, and another account's order for its pet", async () => {
    const other = await server.createKey('business');
    const held = await holdPlacementLock(a.id);
    let petId: number;
    try {
      // pets.created_by and, for the order, event_recipients.account_id (the pet's creator reads order.placed)
      // reference the account: their foreign-key checks take FOR KEY SHARE, which FOR NO KEY UPDATE lets through.
      petId = (await createPet(server, { name: 'Mine', key: a.key })).id;
      const res = await placeOrder(server, petId, other);
      expect(res.status).toBe(201);
    } finally {
      await held.release();
    }
    // The foreign key was checked: the pet's creator is a reader of the order's event.
    const { rows } = await server.app.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM event_recipients r JOIN events e ON e.id = r.event_id
        WHERE r.account_id = $1 AND r.type = 'order.placed' AND (e.object->>'petId')::bigint = $2`,
      [a.id, petId],
    );
    expect(rows[0]!.n).toBe(1);
    await expectStatusesAgree(server.app.database.pool);
  });
});

import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pagination/cursor.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { nextPath } from '../helpers/pets.js';
import { waitFor } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

const PLACERS = 8;
const EACH = 25;

let server: TestServer;
let key: string;
let accountId: number;
let pets: number[];
beforeAll(async () => {
  // Placements queue behind a held one below: a lock timeout well above how long it is held, and a
  // connection for each of them besides the reader's.
  server = await startTestServer({ LOG_LEVEL: 'error', DB_LOCK_TIMEOUT_MS: '20000', DB_STATEMENT_TIMEOUT_MS: '30000', DB_POOL_MAX: '12' });
  // A quota the reader's polling cannot exhaust; open orders enough for every placement.
  key = await server.createKey('enterprise', { perMinute: 100_000, perDay: 1_000_000 });
  accountId = (await server.request('/v1/account', { key })).body.id;
  // Setup only: the pets to order, in one statement.
  const { rows } = await server.app.database.pool.query<{ id: number }>(
    `INSERT INTO pets (name, category_id) SELECT 'tail ' || g, 1 FROM generate_series(1, $1::int) AS g RETURNING id`,
    [PLACERS * EACH + 1],
  );
  pets = rows.map((r) => r.id);
});
afterAll(() => server?.close());

/** Sessions of the test's database waiting for a lock another holds. */
const blocked = async () =>
  (
    await server.app.database.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0`,
    )
  ).rows[0]!.n;

describe('listOrders under concurrent placements by one account', () => {
  it(`a placement committed late is not skipped: ${PLACERS} placers of one account, one placement held open, a reader tailing by Link sees every order once`, async () => {
    // A slow placement: it locks the account and draws its order's id first, and commits only after the reader has read.
    const slow = new pg.Client({ connectionString: server.db.env.DATABASE_URL });
    await slow.connect();
    await slow.query('BEGIN');
    const placed1 = await slow.query<{ r: { body: { id: number } } }>('SELECT place_order($1, $2, $3, $4, $5, NULL) AS r', [pets.at(-1), accountId, 1000, 259_200, new Date()]);
    const lateId = placed1.rows[0]!.r.body.id;

    const placed = new Set<number>();
    let placing = true;
    const placers = Array.from({ length: PLACERS }, async (_, p) => {
      for (let i = 0; i < EACH; i++) {
        // Keyed placements: the claim, the placement and the saved response in one call; the late one's window is the widest.
        const { status, body } = await server.request('/v1/store/orders', {
          key,
          body: { petId: pets[p * EACH + i]! },
          headers: { 'idempotency-key': `tail-${p}-${i}` },
        });
        expect(status).toBe(201);
        placed.add(body.id);
      }
    });
    const allPlaced = Promise.all(placers).finally(() => (placing = false));

    // Every placer's first placement waits on the account's row: none commits a higher id meanwhile,
    // so the reader, which cannot see the slow order yet, cannot pass it. (Without the lock none would wait.)
    if (!(await waitFor(async () => (await blocked()) >= PLACERS, 30_000, 20))) {
      await slow.end();
      throw new Error(`${PLACERS} placements never queued on the account's row`);
    }
    const whileHeld = await server.request('/v1/store/orders?limit=7', { key });
    expect([whileHeld.status, whileHeld.body]).toEqual([200, []]);
    await slow.query('COMMIT');
    await slow.end();

    const seen: number[] = [];
    let next = '/v1/store/orders?limit=7';
    for (;;) {
      const stillPlacing = placing;
      const { status, body, headers } = await server.request(next, { key });
      expect(status).toBe(200);
      seen.push(...body.map((o: { id: number }) => o.id));
      const link = nextPath(headers.get('link'));
      if (link) next = link;
      else if (!stillPlacing) break; // a last page read after every placement had answered
      // At the end for now: wait where the last page ended, as a tailing client keeps its place.
      else if (seen.length > 0) next = `/v1/store/orders?limit=7&cursor=${encodeCursor(seen.at(-1)!)}`;
      if (!link) await sleep(20);
    }
    await allPlaced;

    expect(placed.size).toBe(PLACERS * EACH);
    expect(seen).toHaveLength(PLACERS * EACH + 1); // every order exactly once: the late one and each placer's
    expect(new Set(seen)).toEqual(new Set([...placed, lateId]));
    expect([...seen].sort((a, b) => a - b)).toEqual(seen); // in id order
    expect(seen[0]).toBe(lateId); // drawn first, committed before every other
    await expectStatusesAgree(server.app.database.pool);
  }, 120_000);
});

import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { operations } from '../../generated/openapi.js';
import { encodeCursor } from '../../src/pagination/cursor.js';
import { expectStatusesAgree } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

type ListQuery = NonNullable<operations['listOrders']['parameters']['query']>;

const PLACERS = 6;
const EACH = 40;

let server: TestServer;
let pets: number[];
beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: 'error' });
  // Setup only: the pets to order, in one statement.
  const { rows } = await server.app.database.pool.query<{ id: number }>(
    `INSERT INTO pets (name, category_id) SELECT 'tail ' || g, 1 FROM generate_series(1, $1::int) AS g RETURNING id`,
    [PLACERS * EACH],
  );
  pets = rows.map((r) => r.id);
});
afterAll(() => server?.close());

/** The query of the `rel="next"` target of a Link header, if any, as a typed client's user reads it. */
function nextOf(link: string | null): ListQuery | undefined {
  const next = /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1];
  if (!next) return undefined;
  const params = new URL(next).searchParams;
  return { limit: Number(params.get('limit')), cursor: params.get('cursor')! };
}

describe('listOrders under concurrent placements by the same key', () => {
  it("shows a reader following Link cursors every order its key placed while it reads, none twice", async () => {
    const placed = new Set<number>();
    let placing = true;
    let retried = 0;
    const placers = Array.from({ length: PLACERS }, async (_, p) => {
      for (let i = 0; i < EACH; i++) {
        // Keyed placements are multi-statement transactions: the widest window between drawing an id and committing.
        // Placements of one account wait on each other's lock; on a starved machine a wait can pass the lock
        // timeout (503, Retry-After), and the client retries with its Idempotency-Key, as documented.
        const place = () =>
          server.api.POST('/store/orders', { body: { petId: pets[p * EACH + i]! }, params: { header: { 'Idempotency-Key': `tail-${p}-${i}` } } });
        let answer = await place();
        for (let retry = 0; answer.response.status === 503 && retry < 5; retry++) {
          retried++;
          answer = await place();
        }
        expect(answer.response.status).toBe(201);
        placed.add(answer.data!.id);
      }
    });
    const allPlaced = Promise.all(placers).finally(() => (placing = false));

    const seen: number[] = [];
    let query: ListQuery = { limit: 7 };
    for (;;) {
      const stillPlacing = placing;
      const { data, response } = await server.api.GET('/store/orders', { params: { query } });
      expect(response.status).toBe(200);
      seen.push(...data!.map((o) => o.id));
      const next = nextOf(response.headers.get('link'));
      if (next) query = next;
      else if (!stillPlacing) break; // a last page read after every placement had answered
      // At the end for now: wait where the last page ended, as a tailing client keeps its place.
      else if (seen.length > 0) query = { limit: 7, cursor: encodeCursor(seen.at(-1)!) };
      // Tailing: a short pause between reads at the end, so the key's quota (1000 a minute) outlasts slow placements.
      if (!next) await sleep(20);
    }
    await allPlaced;
    if (retried > 0) console.log(`placements retried after a 503: ${retried}`);

    expect(placed.size).toBe(PLACERS * EACH);
    expect(new Set(seen).size).toBe(seen.length); // nothing listed twice
    expect([...seen].sort((a, b) => a - b)).toEqual(seen); // in id order
    expect([...placed].filter((id) => !seen.includes(id))).toEqual([]);
    await expectStatusesAgree(server.app.database.pool);
  }, 120_000);
});

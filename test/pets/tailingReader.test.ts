import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pets/cursor.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: 'error' });
});
afterAll(() => server?.close());

/** The `rel="next"` target of a Link header, if any. */
const nextOf = (link: string | null) => /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1];

describe('pagination under concurrent creates', () => {
  it('shows a reader following Link cursors every pet created while it reads', async () => {
    const created = new Set<number>();
    let creating = true;
    const creators = Array.from({ length: 6 }, async (_, c) => {
      for (let i = 0; i < 60; i++) {
        // Keyed creates are multi-statement transactions: the widest window between drawing an id and committing.
        const res = await server.request('/v1/pets', { body: { name: `c${c}-${i}`, categoryId: 1 }, headers: { 'idempotency-key': `tail-${c}-${i}` } });
        expect(res.status).toBe(201);
        created.add(res.body.id);
      }
    });
    const allCreated = Promise.all(creators).finally(() => (creating = false));

    const seen: number[] = [];
    let url = '/v1/pets?limit=7';
    for (;;) {
      const stillCreating = creating;
      const page = await server.request(url);
      expect(page.status).toBe(200);
      seen.push(...page.body.map((p: { id: number }) => p.id));
      const next = nextOf(page.headers.get('link'));
      if (next) url = new URL(next).pathname + new URL(next).search;
      else if (!stillCreating) break; // a last page read after every create had answered
      // At the end for now: wait where the last page ended, as a tailing client keeps its place.
      else if (seen.length > 0) url = `/v1/pets?limit=7&cursor=${encodeCursor(seen.at(-1)!)}`;
    }
    await allCreated;

    expect(new Set(seen).size).toBe(seen.length); // nothing listed twice
    expect([...seen].sort((a, b) => a - b)).toEqual(seen); // in id order
    const missed = [...created].filter((id) => !seen.includes(id));
    expect(missed).toEqual([]);
  }, 120_000);
});

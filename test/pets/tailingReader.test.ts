import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pagination/cursor.js';
import type { operations } from '../../generated/openapi.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: 'error' });
});
afterAll(() => server?.close());

type ListQuery = NonNullable<operations['listPets']['parameters']['query']>;

/** The query of the `rel="next"` target of a Link header, if any, as a typed client's user reads it. */
function nextOf(link: string | null): ListQuery | undefined {
  const next = /<([^>]+)>; rel="next"/.exec(link ?? '')?.[1];
  if (!next) return undefined;
  const params = new URL(next).searchParams;
  return { limit: Number(params.get('limit')), cursor: params.get('cursor')! };
}

describe('pagination under concurrent creates', () => {
  it('shows a reader following Link cursors every pet created while it reads', async () => {
    const created = new Set<number>();
    let creating = true;
    const creators = Array.from({ length: 6 }, async (_, c) => {
      for (let i = 0; i < 60; i++) {
        // Keyed creates are multi-statement transactions: the widest window between drawing an id and committing.
        const { data, response } = await server.api.POST('/pets', {
          body: { name: `c${c}-${i}`, categoryId: 1 },
          params: { header: { 'Idempotency-Key': `tail-${c}-${i}` } },
        });
        expect(response.status).toBe(201);
        created.add(data!.id);
      }
    });
    const allCreated = Promise.all(creators).finally(() => (creating = false));

    const seen: number[] = [];
    let query: ListQuery = { limit: 7 };
    for (;;) {
      const stillCreating = creating;
      const { data, response } = await server.api.GET('/pets', { params: { query } });
      expect(response.status).toBe(200);
      seen.push(...data!.map((p) => p.id));
      const next = nextOf(response.headers.get('link'));
      if (next) query = next;
      else if (!stillCreating) break; // a last page read after every create had answered
      // At the end for now: wait where the last page ended, as a tailing client keeps its place.
      else if (seen.length > 0) query = { limit: 7, cursor: encodeCursor(seen.at(-1)!) };
    }
    await allCreated;

    expect(new Set(seen).size).toBe(seen.length); // nothing listed twice
    expect([...seen].sort((a, b) => a - b)).toEqual(seen); // in id order
    const missed = [...created].filter((id) => !seen.includes(id));
    expect(missed).toEqual([]);
  }, 120_000);
});

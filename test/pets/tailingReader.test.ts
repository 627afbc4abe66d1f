import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pagination/cursor.js';
import type { EventBody } from '../helpers/events.js';
import { nextPath } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * Creates take no lock shared by all accounts, so they commit in any order. listPets is a browse
 * by id: it never lists a pet twice, but misses a pet whose create was still in flight when a
 * page past its id was read. listEvents is the list that follows every create (`pet.created`).
 */
const WRITERS = 8;
const EACH = 20;

let server: TestServer;
let key: string;
let accountId: number;
beforeAll(async () => {
  server = await startTestServer({ LOG_LEVEL: 'error' });
  // A quota the readers' polling cannot exhaust.
  const created = await server.app.accounts.createAccount({ plan: 'enterprise', perMinute: 100_000, perDay: 1_000_000 });
  [key, accountId] = [created.key.secret, created.accountId];
});
afterAll(() => server?.close());

/**
 * A client tailing listPets: follows `Link`, and at the end reads on from the last id it saw, as a
 * client keeps its place. `read()` reads one page and returns how many pets were new.
 */
function petsReader() {
  const seen: number[] = [];
  let next = '/v1/pets?limit=7';
  let more = true;
  return {
    seen,
    async read(): Promise<void> {
      const { status, body, headers } = await server.request(next, { key });
      expect(status).toBe(200);
      seen.push(...body.map((p: { id: number }) => p.id));
      const link = nextPath(headers.get('link'));
      more = link !== undefined;
      if (link) next = link;
      else if (seen.length > 0) next = `/v1/pets?limit=7&cursor=${encodeCursor(seen.at(-1)!)}`;
    },
    /** Reads on until a page has no `Link`. */
    async toTheEnd(): Promise<void> {
      do await this.read();
      while (more);
    },
  };
}

/**
 * A client tailing listEvents' `pet.created`: follows `Link`; at the end it reads the same URL again
 * and takes only what follows what that URL already gave (events are only ever appended there).
 */
function eventsReader() {
  const seen: EventBody[] = [];
  let next = '/v1/events?type=pet.created&limit=7';
  let taken = 0;
  return {
    seen,
    async read(): Promise<number> {
      const { status, body, headers } = await server.request<EventBody[]>(next, { key });
      expect(status).toBe(200);
      const fresh = body.slice(taken);
      seen.push(...fresh);
      const link = nextPath(headers.get('link'));
      if (link) [next, taken] = [link, 0];
      else taken = body.length;
      return fresh.length;
    },
  };
}

const petOf = (event: EventBody) => event.data.object.id as number;

describe('following creates while 8 writers create pets', () => {
  it('a create held open and committed last: listEvents gives every pet exactly once, the late one first; listPets, read past it meanwhile, never lists it', async () => {
    // A slow create: it draws its pet's id (and its event's transaction id) first, and commits last.
    const slow = new pg.Client({ connectionString: server.db.env.DATABASE_URL });
    await slow.connect();
    await slow.query('BEGIN');
    const lateId = (await slow.query<{ r: { body: { id: number } } }>('SELECT create_pet($1, $2, $3, $4, NULL) AS r', ['Late', 1, 'available', accountId])).rows[0]!.r.body.id;

    const created = new Set<number>();
    let writing = true;
    const writers = Array.from({ length: WRITERS }, async (_, w) => {
      for (let i = 0; i < EACH; i++) {
        // Every other create keyed: the claim, the create and the saved response in one call.
        const headers: Record<string, string> = i % 2 ? { 'idempotency-key': `tail-${w}-${i}` } : {};
        const { status, body } = await server.request('/v1/pets', { key, body: { name: `w${w}-${i}`, categoryId: 1 }, headers });
        expect(status).toBe(201);
        created.add(body.id);
      }
    });
    const allWritten = Promise.all(writers).finally(() => (writing = false));

    // Both lists tailed while the writers run.
    const tailing = petsReader();
    const events = eventsReader();
    while (writing) {
      await tailing.read();
      await events.read();
      await sleep(20);
    }
    await allWritten;
    expect(created.size).toBe(WRITERS * EACH);
    // Every writer has committed, the slow create has not. listEvents lists nothing yet: every event waits
    // for the older transaction still open. A listPets reader reads past the late id: every writer's pet, in order.
    expect(await events.read()).toBe(0);
    expect(events.seen).toEqual([]);
    const passed = petsReader();
    await passed.toTheEnd();
    expect(passed.seen).toEqual([...created].sort((a, b) => a - b));
    expect(passed.seen[0]).toBeGreaterThan(lateId);

    await slow.query('COMMIT');
    await slow.end();

    // listEvents: every pet exactly once, the late one first (its transaction began first).
    // Bounded generously: another open write transaction on a shared server delays events too.
    for (let guard = 0; guard < 3000 && events.seen.length < WRITERS * EACH + 1; guard++) if ((await events.read()) === 0) await sleep(20);
    const fromEvents = events.seen.map(petOf);
    expect(fromEvents).toHaveLength(WRITERS * EACH + 1);
    expect(new Set(fromEvents)).toEqual(new Set([...created, lateId]));
    expect(fromEvents[0]).toBe(lateId);

    // listPets: a reader that went past the late pet's id while it was in flight never lists it.
    await passed.toTheEnd();
    expect(passed.seen).toHaveLength(WRITERS * EACH);
    expect(passed.seen).not.toContain(lateId);
    // The reader that tailed during the writes (it may also have missed writers' pets still in flight as it
    // passed them; how many depends on timing): never one twice, in id order, and never the late one.
    await tailing.toTheEnd();
    expect(new Set(tailing.seen).size).toBe(tailing.seen.length);
    expect([...tailing.seen].sort((a, b) => a - b)).toEqual(tailing.seen);
    expect(tailing.seen.every((id) => created.has(id))).toBe(true);
    // A reader starting now lists every pet.
    const fresh = petsReader();
    await fresh.toTheEnd();
    expect(fresh.seen).toEqual([...created, lateId].sort((a, b) => a - b));
  }, 120_000);

  it('listPets: a pet whose create began after a page was read is on a later page, and no pet is listed twice', async () => {
    const reader = petsReader();
    await reader.toTheEnd();
    const last = reader.seen.at(-1)!;
    const ids: number[] = [];
    for (let i = 0; i < 9; i++) ids.push((await server.request('/v1/pets', { key, body: { name: `after ${i}`, categoryId: 1 } })).body.id);
    // Drawn after the page was read, so above everything on it.
    expect(Math.min(...ids)).toBeGreaterThan(last);
    const before = reader.seen.length;
    await reader.toTheEnd();
    expect(reader.seen.slice(before)).toEqual(ids);
    expect(new Set(reader.seen).size).toBe(reader.seen.length);
  });
});

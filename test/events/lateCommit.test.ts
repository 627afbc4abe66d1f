import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { waitForEvents, WEBHOOK_TEST_ENV, type EventBody } from '../helpers/events.js';

const WRITERS = 8;
const CREATES_EACH = 15;

describe('listEvents: a reader following Link never misses an event committed late', () => {
  let server: TestServer;
  let key: string;
  let accountId: number;

  beforeAll(async () => {
    server = await startTestServer(WEBHOOK_TEST_ENV);
    const created = await server.app.accounts.createAccount({ plan: 'business' });
    key = created.key.secret;
    accountId = created.accountId;
  });
  afterAll(() => server?.close());

  it(`${WRITERS} writers creating ${CREATES_EACH} pets each, one transaction held open across pages, one reader tailing by Link: every event once, in order`, async () => {
    // A slow writer: its transaction takes its id (and writes its event) first, and commits last.
    const slow = new pg.Client({ connectionString: server.db.env.DATABASE_URL });
    await slow.connect();
    await slow.query('BEGIN');
    const { rows } = await slow.query<{ id: number }>(
      `WITH ev AS (INSERT INTO events (type, object) VALUES ('pet.updated', '{"id": 0}') RETURNING id, xid)
       INSERT INTO event_recipients (account_id, event_id, type, xid) SELECT $1, id, 'pet.updated', xid FROM ev RETURNING event_id AS id`,
      [accountId],
    );
    const lateId = `evt_${rows[0]!.id}`;

    // The reader follows Link; at the end of the list (no Link) it reads the same URL again later,
    // taking only what follows the events that URL already gave (new events are only ever appended).
    const seen: EventBody[] = [];
    let next = '/v1/events?limit=7';
    let takenFromNext = 0;
    const readPage = async () => {
      const res = await server.request<EventBody[]>(next, { key });
      expect(res.status).toBe(200);
      const fresh = res.body.slice(takenFromNext);
      seen.push(...fresh);
      const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
      if (link) [next, takenFromNext] = [link, 0];
      else takenFromNext = res.body.length;
      return fresh.length;
    };
    const writers = Array.from({ length: WRITERS }, async () => {
      for (let i = 0; i < CREATES_EACH; i++) expect((await server.request('/v1/pets', { key, body: { name: `W${i}`, categoryId: 1 } })).status).toBe(201);
    });
    const writing = Promise.all(writers);
    // While the slow transaction is open, nothing after it is visible: the reader reads no event at all.
    let readWhileOpen = 0;
    for (let i = 0; i < 5; i++) readWhileOpen += await readPage();
    await writing;
    readWhileOpen += await readPage();
    expect(readWhileOpen).toBe(0);
    await slow.query('COMMIT');
    await slow.end();

    const all = await waitForEvents(server, key, WRITERS * CREATES_EACH + 1);
    // The reader tails from where it stands, following Link until no page follows.
    for (let guard = 0; guard < 100 && seen.length < all.length; guard++) {
      const before = seen.length;
      await readPage();
      if (seen.length === before) break;
    }
    expect(seen.map((e) => e.id)).toEqual(all.map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(WRITERS * CREATES_EACH + 1);
    expect(seen.filter((e) => e.type === 'pet.created')).toHaveLength(WRITERS * CREATES_EACH);
    expect(seen.map((e) => e.id)).toContain(lateId);
    // The late writer took its transaction id first, so its event is listed first though it committed last.
    expect(seen[0]!.id).toBe(lateId);
  });
});

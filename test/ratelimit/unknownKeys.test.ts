import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** GET /v1/pets through the typed client, with `key` as the bearer key. */
const list = (server: TestServer, key: string) => server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } });

const madeUpKey = () => `as_${randomBytes(32).toString('base64url')}`;

describe('an address that keeps sending unknown keys', () => {
  // Time moves only when a test says: the flood below falls within one instant, and the
  // address stays refused (until the end of its minute) for the whole file.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_ANONYMOUS: '3/100', RATE_LIMIT_BAN_AFTER: '1000' }, { clock: clock.now });
  });
  afterAll(() => server?.close());

  it('stops costing database lookups once its quota without a valid key is spent', async () => {
    const known = await server.createKey('business');
    expect((await list(server, known)).response.status).toBe(200); // now in the key cache
    const query = vi.spyOn(server.app.database.pool, 'query');

    const first = [];
    for (let i = 0; i < 4; i++) first.push((await list(server, madeUpKey())).response.status);
    expect(first).toEqual([401, 401, 401, 429]);
    const lookupsWhileAllowed = query.mock.calls.length;
    expect(lookupsWhileAllowed).toBe(4); // one per unknown key

    const flood = await Promise.all(Array.from({ length: 50 }, () => list(server, madeUpKey())));
    expect(new Set(flood.map((r) => r.response.status))).toEqual(new Set([429]));
    // At most one lookup a second for a refused address: 50 requests in the same instant, at most one.
    expect(query.mock.calls.length - lookupsWhileAllowed, 'lookups made for a refused address').toBeLessThanOrEqual(1);

    // Known keys from the same address are served as before (from the cache, then the list query).
    expect((await list(server, known)).response.status).toBe(200);
    query.mockRestore();
  });

  it('still verifies a real key from that address, at most one lookup a second', async () => {
    const fresh = await server.createKey('business'); // not in this instance's cache yet
    // The flood above took this second's lookup: the real key is refused as keyless until a second has passed since.
    const statuses = [(await list(server, fresh)).response.status];
    clock.advance(999);
    statuses.push((await list(server, fresh)).response.status);
    clock.advance(1);
    statuses.push((await list(server, fresh)).response.status);
    expect(statuses).toEqual([429, 429, 200]);
  });
});

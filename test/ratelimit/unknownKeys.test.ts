import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsRepository } from '../../src/accounts/repository.js';
import { countKeyLookups } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** GET /v1/pets through the typed client, with `key` as the bearer key. */
const list = (server: TestServer, key: string) => server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } });

const madeUpKey = () => `as_${randomBytes(32).toString('base64url')}`;

describe('made-up keys', () => {
  // Time moves only when a test says: every request below falls within one instant.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_ANONYMOUS: '3/100', RATE_LIMIT_BAN_AFTER: '100000' }, { clock: clock.now });
  });
  afterAll(() => server?.close());

  it('cost no database lookup, however many, and never lock out a real key from the same address', async () => {
    const real = await server.createKey('business'); // issued, never used on this instance yet
    const lookups = countKeyLookups(server);
    try {
      // All at once: the made-up keys wait together for the index's next refresh, then are refused
      // (200: under the 256 connections one address may hold).
      const flood = await Promise.all(Array.from({ length: 200 }, () => list(server, madeUpKey())));
      const statuses = flood.map((r) => r.response.status);
      // Requests without a valid key are counted by address: 3 allowed (401), the rest refused (429).
      expect(statuses.filter((s) => s === 401)).toHaveLength(3);
      expect(statuses.filter((s) => s === 429)).toHaveLength(197);
      expect(lookups.count(), 'lookups for made-up keys').toBe(0);

      // The address is refused for requests without a valid key, yet a real key is served at once.
      expect((await list(server, real)).response.status).toBe(200);
      expect(lookups.count(), 'the real key looked up once').toBe(1);
    } finally {
      lookups.restore();
    }
  });

  it('accept a key issued elsewhere (the CLI, another instance) on its first use, from the index next refresh', async () => {
    // Written straight to the database, so this instance learns of it only from its index's refresh.
    const key = (await accountsRepository(server.app.database.pool).createAccount({ plan: 'pro' })).key.secret;
    expect((await list(server, key)).response.status).toBe(200);
  });
});

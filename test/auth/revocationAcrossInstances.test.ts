import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { KEY_CACHE_TTL_MS } from '../../src/limits.js';
import { manualClock } from '../helpers/clock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * Two instances on one database, each with its cache of verified keys. One clock for both
 * (as NTP gives them), starting at the real time: a key's expiry is the database's now(),
 * judged by the service's clock.
 */
describe('a key revoked or rolled on one instance stops working on every instance', () => {
  const clock = manualClock(Date.now());
  let db: TestDatabase;
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    a = await startTestServer({}, { db, clock: clock.now });
    b = await startTestServer({}, { db, clock: clock.now });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  const status = async (server: TestServer, key: string) => (await server.request('/v1/pets', { key })).status;
  const both = async (key: string) => [await status(a!, key), await status(b!, key)];

  /** A new account with a managing key and a second key, both holding every scope. */
  async function account() {
    const { accountId, key: manager } = await a!.app.accounts.createAccount({ plan: 'business' });
    const other = (await a!.app.accounts.createKey(accountId, { name: 'to go', scopes: SCOPES }))!;
    return { manager: manager.secret, other };
  }

  it('revokeApiKey on A: the key, cached on both, answers 401 on both once the cache bound has passed', async () => {
    const { manager, other } = await account();
    expect(await both(other.secret)).toEqual([200, 200]); // now cached on both
    const revoked = await a!.request(`/v1/account/api-keys/${other.id}`, { method: 'DELETE', key: manager });
    expect(revoked.status).toBe(204);
    clock.advance(KEY_CACHE_TTL_MS + 1); // 2,001 ms: within the promised 5 s
    expect(await both(other.secret)).toEqual([401, 401]);
    expect(await both(manager)).toEqual([200, 200]);
    const listed = await b!.request('/v1/account/api-keys', { key: manager });
    expect(listed.body.find((k: { id: number }) => k.id === other.id).revokedAt).toEqual(expect.any(String));
  });

  it('rollApiKey on A with expiresInSeconds 0: the old key answers 401 on B after the cache bound, the new one 200', async () => {
    const { manager, other } = await account();
    expect(await both(other.secret)).toEqual([200, 200]);
    const rolled = await a!.request(`/v1/account/api-keys/${other.id}/roll`, { body: { expiresInSeconds: 0 }, key: manager });
    expect(rolled.status).toBe(201);
    expect(rolled.body).toMatchObject({ name: 'to go', scopes: SCOPES, secret: expect.stringMatching(/^ask_[0-9A-Za-z]{36}$/) });
    // The old key expired at the database's now(): the clock catches up with real time first, then passes the cache bound.
    clock.set(Math.max(clock.now(), Date.now()));
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await status(b!, other.secret)).toBe(401);
    expect(await status(a!, other.secret)).toBe(401);
    expect(await both(rolled.body.secret)).toEqual([200, 200]);
  });
});

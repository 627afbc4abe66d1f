import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGING_SCOPE } from '../../src/accounts/repository.js';
import { KEY_CACHE_TTL_MS } from '../../src/limits.js';
import { addKey, databaseNow, INVALID_TOKEN, keyCounts, keyRow, newAccount, type TestKey } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import { doc } from '../helpers/schema.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

// The key cache's ages and keys' expiry are judged by this clock, which moves only when a test says.
const clock = manualClock();
/** Sets the service's clock to `ms`, never back (cached key answers must not grow younger). */
const forwardTo = (ms: number) => clock.set(Math.max(clock.now(), ms));
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server?.close());

/** DELETE /v1/account/api-keys/{keyId} with `as`'s key, contract-checked. */
const revoke = (as: TestKey, keyId: number) => server.request(`/v1/account/api-keys/${keyId}`, { method: 'DELETE', key: as.secret });
const statusOf = async (key: TestKey) => (await key.api.GET('/pets')).response.status;
const lastKey = (keyId: number) => ({
  code: 'last_key',
  message: `API key ${keyId} is the account's last key that does not expire and holds account:manage, without which no key could manage the account's keys; create one (no expiresAt, with account:manage), or roll this one, first.`,
  status: 409,
});

describe('revokeApiKey', () => {
  it('answers 204 and the key answers 401 once its cached answer is older than the cache ttl', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    expect(await statusOf(key)).toBe(200); // cached as valid
    const before = await databaseNow(server);
    const res = await revoke(account.first, key.id);
    const after = await databaseNow(server);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(res.headers.get('api-stability')).toBeNull(); // stable since 1.1.0

    clock.advance(KEY_CACHE_TTL_MS + 1);
    const { response, error } = await key.api.GET('/pets');
    expect(response.status).toBe(401);
    expect(error?.code).toBe('unauthorized');
    expect(response.headers.get('www-authenticate')).toBe(INVALID_TOKEN);
    expect(await statusOf(account.first)).toBe(200);

    // Still listed, with when.
    const revokedAt = (await keyRow(server, key.id))!.revoked_at!;
    expect(revokedAt).toBeGreaterThanOrEqual(before);
    expect(revokedAt).toBeLessThanOrEqual(after);
    const { data } = await account.first.api.GET('/account/api-keys');
    expect(data!.map((k) => [k.id, k.revokedAt])).toEqual([
      [account.first.id, null],
      [key.id, new Date(revokedAt).toISOString()],
    ]);
  });

  it('lets a key revoke itself', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    expect((await revoke(key, key.id)).status).toBe(204);
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await statusOf(key)).toBe(401);
    expect(await keyCounts(server, account.id)).toEqual({ all: 2, live: 1 });
  });

  it('answers 204 again for a revoked key, changing nothing', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    expect((await revoke(account.first, key.id)).status).toBe(204);
    const row = await keyRow(server, key.id);
    const again = await revoke(account.first, key.id);
    expect(again.status).toBe(204);
    expect(await keyRow(server, key.id)).toEqual(row);
  });

  it('refuses to revoke the last live key (409 last_key), which keeps working; an expired key is not live', async () => {
    const account = await newAccount(server);
    const expired = await addKey(server, account.id, ['pets:read'], { expiresAt: '2000-01-01T00:00:00.000Z' });
    const revoked = await addKey(server, account.id);
    expect((await revoke(account.first, revoked.id)).status).toBe(204);

    const res = await revoke(account.first, account.first.id);
    expect(res.status).toBe(409);
    expect(res.body).toEqual(lastKey(account.first.id));
    expect((await keyRow(server, account.first.id))!.revoked_at).toBeNull();
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await statusOf(account.first)).toBe(200);

    // Revoking the expired key is no loss of access: 204.
    expect((await revoke(account.first, expired.id)).status).toBe(204);
    expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 1 });

    // With another live key, the first one can go.
    const { data } = await account.first.api.POST('/account/api-keys', { body: { name: 'next' } });
    expect((await revoke(account.first, account.first.id)).status).toBe(204);
    expect(await keyCounts(server, account.id)).toEqual({ all: 4, live: 1 });
    expect((await keyRow(server, data!.id))!.revoked_at).toBeNull();
  });

  it('refuses to revoke the new key of a roll whose old key is due to expire (409 last_key): the account keeps a key without an end', async () => {
    const account = await newAccount(server);
    // Ten minutes of overlap by the database's clock, which sets the end; the service's clock, which
    // judges it, is then set to 2 s before it: the old key asks with 2 s left, however slow the machine.
    const rolled = await account.first.api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: account.first.id } }, body: { expiresInSeconds: 600 } });
    expect(rolled.response.status).toBe(201);
    const successor = rolled.data!.id;
    forwardTo((await keyRow(server, account.first.id))!.expires_at! - 2_000);

    // Whether the old key (2 s left) or the new one asks.
    const res = await revoke(account.first, successor);
    expect(res.status).toBe(409);
    expect(res.body).toEqual(lastKey(successor));
    expect((await keyRow(server, successor))!.revoked_at).toBeNull();
    expect(await keyCounts(server, account.id)).toEqual({ all: 2, live: 2 });

    // A roll with the longest overlap is no different: an end is an end.
    const week = await account.first.api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: successor } }, body: { expiresInSeconds: 604800 } });
    expect(week.response.status).toBe(201);
    expect((await revoke(account.first, week.data!.id)).body).toEqual(lastKey(week.data!.id));
    // The key due to expire can go: the one without an end stays.
    expect((await revoke(account.first, successor)).status).toBe(204);
    expect((await keyRow(server, week.data!.id))!.revoked_at).toBeNull();
  });

  it("refuses to revoke the one key without an end while the only other is due to expire, however far away (409 last_key)", async () => {
    const account = await newAccount(server);
    // Ten minutes away by the database's clock (which counts live keys), 2 s away by the service's (which judges the caller's key).
    const soonAt = (await databaseNow(server)) + 600_000;
    const soon = await addKey(server, account.id, undefined, { expiresAt: new Date(soonAt).toISOString() });
    forwardTo(soonAt - 2_000);
    const res = await revoke(soon, account.first.id);
    expect(res.status).toBe(409);
    expect(res.body).toEqual(lastKey(account.first.id));
    const yearAway = await addKey(server, account.id, undefined, { expiresAt: new Date((await databaseNow(server)) + 365 * 86_400_000).toISOString() });
    expect((await revoke(yearAway, account.first.id)).body).toEqual(lastKey(account.first.id));
    expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 3 });
    expect((await keyRow(server, account.first.id))!.revoked_at).toBeNull();

    // The normal case: with another key without an end, it goes (and the expiring ones may too).
    const next = await addKey(server, account.id);
    expect((await revoke(account.first, account.first.id)).status).toBe(204);
    expect((await revoke(next, yearAway.id)).status).toBe(204);
    expect(await keyCounts(server, account.id)).toEqual({ all: 4, live: 2 });
  });

  it('of two keys without an end revoked at once, beside one due to expire, revokes exactly one', async () => {
    for (let round = 0; round < 3; round++) {
      const account = await newAccount(server);
      const expiring = await addKey(server, account.id, undefined, { expiresAt: new Date((await databaseNow(server)) + 86_400_000).toISOString() });
      const [a, b] = [account.first, await addKey(server, account.id)];
      const answers = await Promise.all([revoke(a, a.id), revoke(b, b.id)]);
      expect(answers.map((r) => r.status).sort()).toEqual([204, 409]);
      expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 2 });
      expect((await keyRow(server, expiring.id))!.revoked_at).toBeNull();
    }
  });

  it('of two live keys revoked at once, revokes exactly one: one 204, one 409 last_key', async () => {
    for (let round = 0; round < 5; round++) {
      const account = await newAccount(server);
      const [a, b] = [account.first, await addKey(server, account.id)];
      // Each key revokes itself, so both requests are authenticated before either change commits.
      const answers = await Promise.all([revoke(a, a.id), revoke(b, b.id)]);
      expect(answers.map((r) => r.status).sort()).toEqual([204, 409]);
      const refused = answers.findIndex((r) => r.status === 409);
      const survivor = [a, b][refused]!;
      expect(answers[refused]!.body).toEqual(lastKey(survivor.id));
      expect(await keyCounts(server, account.id)).toEqual({ all: 2, live: 1 });
      expect((await keyRow(server, survivor.id))!.revoked_at).toBeNull();
      clock.advance(KEY_CACHE_TTL_MS + 1);
      expect(await statusOf(survivor)).toBe(200);
      expect(await statusOf([a, b][1 - refused]!)).toBe(401);
    }
  });

  it('counts only keys that can manage keys: the scope getAccount, createApiKey and revokeApiKey require', () => {
    for (const [path, method] of [['/account', 'get'], ['/account/api-keys', 'post'], ['/account/api-keys/{keyId}', 'delete']] as const) {
      expect(doc.paths[path][method]['x-required-scope']).toBe(MANAGING_SCOPE);
    }
  });

  it('refuses to revoke the last key without an end that holds account:manage, beside keys without an end that lack it (409 last_key)', async () => {
    const account = await newAccount(server);
    const reader = await addKey(server, account.id, ['pets:read']);
    const writer = await addKey(server, account.id, ['pets:read', 'pets:write', 'orders:read', 'orders:write', 'events:read', 'webhooks:manage']);
    // What the rule guards against: a key without the scope cannot manage the account's keys, nor revoke one.
    expect((await reader.api.GET('/account')).response.status).toBe(403);
    expect((await revoke(writer, reader.id)).status).toBe(403);

    const res = await revoke(account.first, account.first.id);
    expect(res.status).toBe(409);
    expect(res.body).toEqual(lastKey(account.first.id));
    expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 3 });
    expect((await keyRow(server, account.first.id))!.revoked_at).toBeNull();

    // The keys that cannot manage go while the managing one stays.
    expect((await revoke(account.first, reader.id)).status).toBe(204);
    expect((await revoke(account.first, writer.id)).status).toBe(204);
    expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 1 });

    // A key holding only account:manage counts: with it, the first key goes.
    const manager = await addKey(server, account.id, ['account:manage']);
    expect((await revoke(manager, account.first.id)).status).toBe(204);
    expect((await revoke(manager, manager.id)).body).toEqual(lastKey(manager.id));
    expect(await keyCounts(server, account.id)).toEqual({ all: 4, live: 1 });
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect((await manager.api.GET('/account')).response.status).toBe(200);
  });

  it('of the two last managing keys revoked at once, beside a key without an end that cannot manage, revokes exactly one', async () => {
    for (let round = 0; round < 5; round++) {
      const account = await newAccount(server);
      const reader = await addKey(server, account.id, ['pets:read', 'pets:write']);
      const [a, b] = [account.first, await addKey(server, account.id, ['account:manage'])];
      // Each key revokes itself, so both requests are authenticated before either change commits.
      const answers = await Promise.all([revoke(a, a.id), revoke(b, b.id)]);
      expect(answers.map((r) => r.status).sort()).toEqual([204, 409]);
      const refused = answers.findIndex((r) => r.status === 409);
      const survivor = [a, b][refused]!;
      expect(answers[refused]!.body).toEqual(lastKey(survivor.id));
      expect(await keyCounts(server, account.id)).toEqual({ all: 3, live: 2 });
      expect((await keyRow(server, survivor.id))!.revoked_at).toBeNull();
      expect((await keyRow(server, reader.id))!.revoked_at).toBeNull();
      clock.advance(KEY_CACHE_TTL_MS + 1);
      expect((await survivor.api.GET('/account')).response.status).toBe(200);
    }
  });

  it("answers another account's key with the 404 api_key_not_found of a key that does not exist, and leaves it alone", async () => {
    const account = await newAccount(server);
    const other = await newAccount(server);
    const otherKey = await addKey(server, other.id);
    const theirs = await revoke(account.first, otherKey.id);
    const none = await revoke(account.first, 987_654_321);
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual({ code: 'api_key_not_found', message: `API key ${otherKey.id} not found.`, status: 404 });
    expect(none.body).toEqual({ code: 'api_key_not_found', message: 'API key 987654321 not found.', status: 404 });
    expect(await keyCounts(server, other.id)).toEqual({ all: 2, live: 2 });
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await statusOf(otherKey)).toBe(200);
  });
});

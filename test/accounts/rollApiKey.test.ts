import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { KEY_CACHE_TTL_MS, MAX_LIVE_KEYS_PER_ACCOUNT } from '../../src/limits.js';
import { addKey, databaseNow, INVALID_TOKEN, insufficientScope, keyCounts, keyFrom, keyRow, newAccount, type TestKey } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import type { RequestOptions } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/*
 * A rolled key's end is set by the database's clock (now() + expiresInSeconds) and judged by
 * the service's (here a manual one, near real time): each test sets the service's clock from the
 * expiresAt the database holds, and only ever forward, so the tests hold in any order.
 */
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server?.close());

const SECRET = /^ask_[0-9A-Za-z]{36}$/;
const forwardTo = (ms: number) => clock.set(Math.max(clock.now(), ms));

/** POST /v1/account/api-keys/{keyId}/roll with `as`'s key, contract-checked; `body` undefined sends none. */
const roll = (as: TestKey, keyId: number, body?: unknown) =>
  server.request(`/v1/account/api-keys/${keyId}/roll`, { method: 'POST', key: as.secret, ...(body !== undefined && { body }) } satisfies RequestOptions);

/** The status a key gets for GET /v1/pets now. */
const statusOf = async (key: TestKey) => (await key.api.GET('/pets')).response.status;

/** Rolls and checks the old key's expiresAt is the database's now() during the roll + seconds. */
async function rollTimed(as: TestKey, key: TestKey, body: unknown, seconds: number) {
  const before = await databaseNow(server);
  const res = await roll(as, key.id, body);
  const after = await databaseNow(server);
  expect(res.status).toBe(201);
  const expiresAt = (await keyRow(server, key.id))!.expires_at!;
  expect(expiresAt).toBeGreaterThanOrEqual(before + seconds * 1000);
  expect(expiresAt).toBeLessThanOrEqual(after + seconds * 1000);
  return { successor: keyFrom(server, res.body), expiresAt };
}

describe('rollApiKey', () => {
  it('answers 201 with a new key of the same name and scopes that never expires, working at once', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id, ['pets:read', 'orders:read', 'account:manage'], { name: 'dashboard' });
    // A key rolls itself: the usual way to replace a leaked key.
    const res = await roll(key, key.id, { expiresInSeconds: 3600 });
    expect(res.status).toBe(201);
    expect(res.headers.get('api-stability')).toBeNull(); // stable since 1.1.0
    const successor = res.body;
    expect(successor.secret).toMatch(SECRET);
    expect(successor).toEqual({
      id: successor.id,
      name: 'dashboard',
      prefix: successor.secret.slice(0, 8),
      scopes: ['pets:read', 'orders:read', 'account:manage'],
      createdAt: successor.createdAt,
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
      secret: successor.secret,
    });
    expect(successor.id).toBeGreaterThan(key.id);
    expect(successor.secret).not.toBe(key.secret);
    const fresh = keyFrom(server, successor);
    expect(await statusOf(fresh)).toBe(200);
    expect((await fresh.api.GET('/account')).data!.id).toBe(account.id);
    // Both keys are listed; the old one with its end.
    const { data } = await fresh.api.GET('/account/api-keys');
    const old = data!.find((k) => k.id === key.id)!;
    expect(old.expiresAt).toBe(new Date((await keyRow(server, key.id))!.expires_at!).toISOString());
    expect(old.revokedAt).toBeNull();
    expect(data!.map((k) => k.id)).toEqual([account.first.id, key.id, successor.id]);
  });

  it('keeps the old key working until its expiresAt (now + expiresInSeconds), to the second, then 401', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    expect(await statusOf(key)).toBe(200); // cached as valid, with no end, before the roll
    const { successor, expiresAt } = await rollTimed(account.first, key, { expiresInSeconds: 3600 }, 3600);

    expect(clock.now()).toBeLessThan(expiresAt - 1_000);
    clock.set(expiresAt - 1_000);
    expect(await statusOf(key)).toBe(200);
    clock.set(expiresAt + 1_000);
    const { response, error } = await key.api.GET('/pets');
    expect(response.status).toBe(401);
    expect(error?.code).toBe('unauthorized');
    expect(response.headers.get('www-authenticate')).toBe(INVALID_TOKEN);
    // And from a fresh lookup, once the cached answer is past the cache's ttl.
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await statusOf(key)).toBe(401);
    expect(await statusOf(successor)).toBe(200);
  });

  it('ends the old key at once with expiresInSeconds 0', async () => {
    const account = await newAccount(server);
    const unused = await addKey(server, account.id); // no cached answer on this instance
    const used = await addKey(server, account.id);
    expect(await statusOf(used)).toBe(200); // cached as valid, with no end

    const first = await rollTimed(account.first, unused, { expiresInSeconds: 0 }, 0);
    // The end is the database's now(); the service's clock may be behind it, never ahead by much.
    forwardTo(first.expiresAt + 1);
    expect(await statusOf(unused)).toBe(401);
    expect(await statusOf(first.successor)).toBe(200);

    const second = await rollTimed(account.first, used, { expiresInSeconds: 0 }, 0);
    forwardTo(second.expiresAt + 1);
    // A cached answer is looked up again within the cache's ttl, as for a revocation.
    clock.advance(KEY_CACHE_TTL_MS + 1);
    expect(await statusOf(used)).toBe(401);
    expect(await statusOf(second.successor)).toBe(200);
  });

  it('keeps an earlier end the old key already had; the new key never expires', async () => {
    const account = await newAccount(server);
    // Ten minutes ahead of the database's clock, which sets the roll's end (through the repository: the service's clock may be ahead).
    const soon = new Date((await databaseNow(server)) + 600_000).toISOString();
    const key = await addKey(server, account.id, ['pets:read'], { name: 'temp', expiresAt: soon });
    const res = await roll(account.first, key.id, { expiresInSeconds: 3600 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'temp', expiresAt: null });
    expect(new Date((await keyRow(server, key.id))!.expires_at!).toISOString()).toBe(soon);
  });

  it.each([
    ['no body', undefined],
    ['an empty body', {}],
  ])('keeps the old key for 86400 s with %s', async (_what, body) => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    await rollTimed(account.first, key, body, 86_400);
  });

  it('takes the longest overlap, 604800 s', async () => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    await rollTimed(account.first, key, { expiresInSeconds: 604_800 }, 604_800);
  });

  it.each([604_801, -1, 1.5, '60', null])('answers expiresInSeconds %j with 400 validation_failed and changes nothing', async (expiresInSeconds) => {
    const account = await newAccount(server);
    const key = await addKey(server, account.id);
    const before = await keyCounts(server, account.id);
    const res = await roll(account.first, key.id, { expiresInSeconds });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect((await keyRow(server, key.id))!.expires_at).toBeNull();
    expect(await keyCounts(server, account.id)).toEqual(before);
  });

  it('answers an unknown property with 400 and changes nothing', async () => {
    const account = await newAccount(server);
    const res = await roll(account.first, account.first.id, { expiresInSeconds: 60, revoke: true });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await keyCounts(server, account.id)).toEqual({ all: 1, live: 1 });
  });

  it('refuses to roll a revoked or an expired key with 409 api_key_inactive', async () => {
    const account = await newAccount(server);
    const revoked = await addKey(server, account.id);
    expect((await account.first.api.DELETE('/account/api-keys/{keyId}', { params: { path: { keyId: revoked.id } } })).response.status).toBe(204);
    const expired = await addKey(server, account.id);
    expect((await roll(account.first, expired.id, { expiresInSeconds: 0 })).status).toBe(201);
    const before = await keyCounts(server, account.id);
    for (const key of [revoked, expired]) {
      const res = await roll(account.first, key.id, { expiresInSeconds: 60 });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ code: 'api_key_inactive', message: `API key ${key.id} is revoked or expired; roll a live key, or create one.`, status: 409 });
    }
    expect(await keyCounts(server, account.id)).toEqual(before);
  });

  it("answers another account's key with the 404 api_key_not_found of a key that does not exist, and leaves it alone", async () => {
    const account = await newAccount(server);
    const other = await newAccount(server);
    const theirs = await roll(account.first, other.first.id, { expiresInSeconds: 60 });
    const none = await roll(account.first, 987_654_321, { expiresInSeconds: 60 });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual({ code: 'api_key_not_found', message: `API key ${other.first.id} not found.`, status: 404 });
    expect(none.body).toEqual({ code: 'api_key_not_found', message: 'API key 987654321 not found.', status: 404 });
    expect((await keyRow(server, other.first.id))!.expires_at).toBeNull();
    expect(await keyCounts(server, other.id)).toEqual({ all: 1, live: 1 });
    expect(await keyCounts(server, account.id)).toEqual({ all: 1, live: 1 });
  });

  it("refuses a caller lacking one of the rolled key's scopes with 403 insufficient_scope: no escalation", async () => {
    const account = await newAccount(server);
    const narrow = await addKey(server, account.id, ['pets:read', 'account:manage']);
    const before = await keyCounts(server, account.id);
    const res = await roll(narrow, account.first.id, { expiresInSeconds: 60 });
    expect(res.status).toBe(403);
    // The first scope of the rolled key (all of them, in order) the caller lacks.
    expect(res.body).toEqual({ code: 'insufficient_scope', message: 'This API key lacks the scope pets:write.', status: 403 });
    expect(res.headers.get('www-authenticate')).toBe(insufficientScope('pets:write'));
    expect((await keyRow(server, account.first.id))!.expires_at).toBeNull();
    expect(await keyCounts(server, account.id)).toEqual(before);

    // A key whose scopes the caller all holds rolls.
    const reader = await addKey(server, account.id, ['pets:read']);
    const ok = await roll(narrow, reader.id, { expiresInSeconds: 60 });
    expect(ok.status).toBe(201);
    expect(ok.body.scopes).toEqual(['pets:read']);
    expect(SCOPES).toContain('pets:write');
  });

  it(`at ${MAX_LIVE_KEYS_PER_ACCOUNT} live keys, refuses an overlap (409 too_many_api_keys, nothing changed) but replaces a key with 0`, async () => {
    const account = await newAccount(server);
    // The first key, 98 more and the one rolled: 100.
    for (let i = 0; i < MAX_LIVE_KEYS_PER_ACCOUNT - 2; i++) await addKey(server, account.id, ['pets:read'], { name: `bulk ${i}` });
    const key = await addKey(server, account.id, ['pets:read'], { name: 'rolled' });
    expect(await keyCounts(server, account.id)).toEqual({ all: 100, live: 100 });

    const overlap = await roll(account.first, key.id, { expiresInSeconds: 60 });
    expect(overlap.status).toBe(409);
    expect(overlap.body.code).toBe('too_many_api_keys');
    expect((await keyRow(server, key.id))!.expires_at).toBeNull();
    expect(await keyCounts(server, account.id)).toEqual({ all: 100, live: 100 });

    const replace = await roll(account.first, key.id, { expiresInSeconds: 0 });
    expect(replace.status).toBe(201);
    expect(replace.body.name).toBe('rolled');
    expect(await keyCounts(server, account.id)).toEqual({ all: 101, live: 100 });
  });
});

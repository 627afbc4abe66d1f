import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKey, keyFrom, keyRow, listAllKeys, newAccount, type ApiKey, type TestKey } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

// lastUsedAt is the service's clock at the key's use: time moves only when a test says.
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server?.close());

/** A key as listApiKeys shows it: as created, without its secret. */
const listed = (key: TestKey, changes: Partial<ApiKey> = {}): ApiKey => {
  const { secret: _secret, ...shown } = key.created;
  return { ...shown, ...changes };
};
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
/** Any key in the ask_ format, wherever it appears. */
const ANY_SECRET = /ask_[0-9A-Za-z]{36}/;

describe('listApiKeys', () => {
  it('lists every key of the account, revoked and expired ones included, in id order, by prefix and never by secret', async () => {
    const account = await newAccount(server);
    const other = await newAccount(server);
    const api = account.first.api;
    const create = async (body: { name: string; scopes?: ApiKey['scopes']; expiresAt?: string }) => {
      const { data, response } = await api.POST('/account/api-keys', { body });
      expect(response.status).toBe(201);
      return keyFrom(server, data!);
    };
    const dashboard = await create({ name: 'dashboard', scopes: ['pets:read', 'orders:read'] });
    const ci = await create({ name: 'ci' });
    await addKey(server, other.id); // between them in id order, never listed here
    const expiring = await create({ name: 'expiring', expiresAt: new Date(clock.now() + 86_400_000).toISOString() });
    expect((await api.DELETE('/account/api-keys/{keyId}', { params: { path: { keyId: ci.id } } })).response.status).toBe(204);
    const rolled = await api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: dashboard.id } }, body: { expiresInSeconds: 0 } });
    expect(rolled.response.status).toBe(201);
    const successor = keyFrom(server, rolled.data!);
    // Only the first key has been used (at this instant); written now, not at the next minute's flush.
    await server.app.flushKeyUsage();

    const { data, response } = await api.GET('/account/api-keys');
    expect(response.status).toBe(200);
    expect(response.headers.get('api-stability')).toBeNull(); // stable since 1.1.0
    expect(response.headers.get('link')).toBeNull();
    expect(data).toEqual([
      listed(account.first, { lastUsedAt: iso(clock.now()) }),
      listed(dashboard, { expiresAt: iso((await keyRow(server, dashboard.id))!.expires_at) }),
      listed(ci, { revokedAt: iso((await keyRow(server, ci.id))!.revoked_at) }),
      listed(expiring),
      listed(successor),
    ]);
    const text = JSON.stringify(data);
    for (const key of [account.first, dashboard, ci, expiring, successor]) {
      expect(text).not.toContain(key.secret);
      expect(key.created.prefix).toBe(key.secret.slice(0, 8));
    }
    expect(text).not.toMatch(ANY_SECRET);
    expect(data!.every((key) => !('secret' in key))).toBe(true);
    expect(data!.map((key) => key.prefix.length)).toEqual([8, 8, 8, 8, 8]);
    expect(new Set(data!.map((key) => key.prefix.slice(0, 4)))).toEqual(new Set(['ask_']));
  });

  it('pages with limit and Link rel=next through every key exactly once, never another account’s', async () => {
    const a = await newAccount(server);
    const b = await newAccount(server);
    const aIds = [a.first.id];
    const bIds = [b.first.id];
    // Interleaved in id order, so a page boundary that leaked would show B's keys.
    for (let i = 0; i < 9; i++) {
      aIds.push((await addKey(server, a.id, ['pets:read'], { name: `a${i}` })).id);
      bIds.push((await addKey(server, b.id, ['pets:read'], { name: `b${i}` })).id);
    }
    // A revoked key is listed like the others.
    await server.app.accounts.revoke({ id: aIds[4]! });

    const byThree = await listAllKeys(a.first.api, 3);
    expect(byThree.pages).toEqual([3, 3, 3, 1]);
    expect(byThree.keys.map((k) => k.id)).toEqual(aIds);
    expect(byThree.keys[4]!.revokedAt).not.toBeNull();
    for (const text of byThree.texts) expect(text).not.toMatch(ANY_SECRET);

    // A last page that is exactly full has no next link: no empty page follows.
    const byFive = await listAllKeys(a.first.api, 5);
    expect(byFive.pages).toEqual([5, 5]);
    expect(byFive.keys).toEqual(byThree.keys);

    const ofB = await listAllKeys(b.first.api, 4);
    expect(ofB.pages).toEqual([4, 4, 2]);
    expect(ofB.keys.map((k) => k.id)).toEqual(bIds);
  });

  it('shows when a key was last used, to the instant of its latest use once written', async () => {
    const account = await newAccount(server);
    const reader = await addKey(server, account.id, ['pets:read']);
    expect((await reader.api.GET('/pets')).response.status).toBe(200);
    clock.advance(1_500);
    expect((await reader.api.GET('/pets')).response.status).toBe(200);
    const usedAt = clock.now();
    clock.advance(1_500);
    await server.app.flushKeyUsage();
    const { data } = await account.first.api.GET('/account/api-keys');
    expect(data!.map((k) => k.id)).toEqual([account.first.id, reader.id]);
    expect(data![1]!.lastUsedAt).toBe(iso(usedAt));
  });

  it('answers a cursor it did not hand out with 400 invalid_cursor', async () => {
    const { error, response } = await server.api.GET('/account/api-keys', { params: { query: { cursor: 'bm90LWEtY3Vyc29y' } } });
    expect(response.status).toBe(400);
    expect(error?.code).toBe('invalid_cursor');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { MAX_LIVE_KEYS_PER_ACCOUNT } from '../../src/limits.js';
import { addKey, countKeyLookups, databaseNow, INVALID_TOKEN, insufficientScope, keyCounts, keyFrom, newAccount } from '../helpers/accounts.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const SECRET = /^ask_[0-9A-Za-z]{36}$/;

describe('createApiKey', () => {
  it('answers 201 with the key and its secret once, and the secret works at once as a bearer key', async () => {
    const account = await newAccount(server);
    const before = await databaseNow(server);
    const { data, response } = await account.first.api.POST('/account/api-keys', { body: { name: 'dashboard', scopes: ['pets:read', 'orders:read'] } });
    const after = await databaseNow(server);
    expect(response.status).toBe(201);
    expect(response.headers.get('api-stability')).toBeNull(); // stable since 1.1.0
    const key = data!;
    expect(Object.keys(key).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'scopes', 'secret']);
    expect(key.secret).toMatch(SECRET);
    expect(key).toEqual({
      id: key.id,
      name: 'dashboard',
      prefix: key.secret.slice(0, 8),
      scopes: ['pets:read', 'orders:read'],
      createdAt: key.createdAt,
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
      secret: key.secret,
    });
    expect(Date.parse(key.createdAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(key.createdAt)).toBeLessThanOrEqual(after);
    expect(key.id).toBeGreaterThan(account.first.id);

    // On this instance at once, with exactly its scopes.
    const created = keyFrom(server, key);
    expect((await created.api.GET('/pets')).response.status).toBe(200);
    expect((await created.api.GET('/store/orders')).response.status).toBe(200);
    const write = await created.api.POST('/pets', { body: { name: 'Rex', categoryId: 1 } });
    expect(write.response.status).toBe(403);
    expect(write.response.headers.get('www-authenticate')).toBe(insufficientScope('pets:write'));
  });

  it('keeps a future expiresAt, in UTC to the millisecond', async () => {
    const account = await newAccount(server);
    const { data, response } = await account.first.api.POST('/account/api-keys', { body: { name: 'temp', expiresAt: '2099-01-01T02:00:00+02:00' } });
    expect(response.status).toBe(201);
    expect(data!.expiresAt).toBe('2099-01-01T00:00:00.000Z');
    expect((await keyFrom(server, data!).api.GET('/pets')).response.status).toBe(200);
  });

  // openapi.yaml's pattern for expiresAt takes what the server read before it had one.
  it.each(['2099-01-01 02:00:00+02:00', '2099-01-01t02:00:00+0200', '2099-01-01T00:00:00.123456789z'])('takes the RFC 3339 variant %s', async (expiresAt) => {
    const account = await newAccount(server);
    const { response } = await account.first.api.POST('/account/api-keys', { body: { name: 'temp', expiresAt } });
    expect(response.status).toBe(201);
  });

  it('gives a key made without scopes exactly the scopes of the key that made it', async () => {
    const account = await newAccount(server);
    const everything = await account.first.api.POST('/account/api-keys', { body: { name: 'all' } });
    expect(everything.response.status).toBe(201);
    expect(everything.data!.scopes).toEqual(SCOPES);

    const narrow = await addKey(server, account.id, ['pets:read', 'account:manage']);
    const { data, response } = await narrow.api.POST('/account/api-keys', { body: { name: 'inherits' } });
    expect(response.status).toBe(201);
    expect(data!.scopes).toEqual(['pets:read', 'account:manage']);
    const inherits = keyFrom(server, data!);
    expect((await inherits.api.GET('/pets')).response.status).toBe(200);
    expect((await inherits.api.GET('/store/orders')).response.status).toBe(403);
  });

  it.each([
    [['pets:write'], 'pets:write'],
    [['pets:read', 'orders:write'], 'orders:write'],
    [['account:manage', 'orders:read', 'pets:write'], 'orders:read'],
  ] as const)('refuses a key asking for %j, which the caller lacks, with 403 naming %s, and creates nothing', async (scopes, lacking) => {
    const account = await newAccount(server);
    const narrow = await addKey(server, account.id, ['pets:read', 'account:manage']);
    const before = await keyCounts(server, account.id);
    const { error, response } = await narrow.api.POST('/account/api-keys', { body: { name: 'escalate', scopes: [...scopes] } });
    expect(response.status).toBe(403);
    expect(error).toEqual({ code: 'insufficient_scope', message: `This API key lacks the scope ${lacking}.`, status: 403 });
    expect(response.headers.get('www-authenticate')).toBe(insufficientScope(lacking));
    expect(await keyCounts(server, account.id)).toEqual(before);
  });

  it.each([
    ['an expiresAt in the past', { name: 'old', expiresAt: new Date(Date.now() - 3_600_000).toISOString() }],
    ['an expiresAt that is no date-time', { name: 'old', expiresAt: 'tomorrow' }],
    ['an expiresAt with a tab for its T', { name: 'old', expiresAt: '2099-01-01\t00:00:00Z' }],
    ['an expiresAt whose offset has no minutes', { name: 'old', expiresAt: '2099-01-01T00:00:00+01' }],
    // A valid date-time (any number of fraction digits) but over openapi.yaml's maxLength of 64.
    ['an expiresAt of 65 characters', { name: 'long', expiresAt: `2999-01-01T00:00:00.${'0'.repeat(44)}Z` }],
    ['an unknown property', { name: 'x', admin: true }],
    ['no name', { scopes: ['pets:read'] }],
    ['an empty name', { name: '' }],
    ['an unknown scope', { name: 'x', scopes: ['pets:delete'] }],
    ['a scope twice', { name: 'x', scopes: ['pets:read', 'pets:read'] }],
    ['no scopes at all', { name: 'x', scopes: [] }],
  ])('answers %s with 400 validation_failed and creates nothing', async (_what, body) => {
    const account = await newAccount(server);
    const before = await keyCounts(server, account.id);
    const res = await server.request('/v1/account/api-keys', { key: account.first.secret, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(await keyCounts(server, account.id)).toEqual(before);
  });

  it(`holds an account to ${MAX_LIVE_KEYS_PER_ACCOUNT} live keys: 409 too_many_api_keys beyond, until one is revoked`, async () => {
    const account = await newAccount(server);
    // The first key and 98 more make 99: fast through the repository.
    for (let i = 0; i < MAX_LIVE_KEYS_PER_ACCOUNT - 2; i++) await addKey(server, account.id, ['pets:read'], { name: `bulk ${i}` });
    // A revoked key does not count.
    await server.app.accounts.revoke({ id: (await addKey(server, account.id, ['pets:read'])).id });
    expect(await keyCounts(server, account.id)).toEqual({ all: 100, live: 99 });

    const hundredth = await account.first.api.POST('/account/api-keys', { body: { name: 'hundredth' } });
    expect(hundredth.response.status).toBe(201);
    const refused = await account.first.api.POST('/account/api-keys', { body: { name: 'one too many' } });
    expect(refused.response.status).toBe(409);
    expect(refused.error).toEqual({ code: 'too_many_api_keys', message: 'The account already has 100 live API keys; revoke one first.', status: 409 });
    expect(await keyCounts(server, account.id)).toEqual({ all: 101, live: 100 });

    // Another account is not held to this one's count.
    const other = await newAccount(server);
    expect((await other.first.api.POST('/account/api-keys', { body: { name: 'fine' } })).response.status).toBe(201);

    const revoked = await account.first.api.DELETE('/account/api-keys/{keyId}', { params: { path: { keyId: hundredth.data!.id } } });
    expect(revoked.response.status).toBe(204);
    expect((await account.first.api.POST('/account/api-keys', { body: { name: 'room again' } })).response.status).toBe(201);
    expect(await keyCounts(server, account.id)).toEqual({ all: 102, live: 100 });
  });

  it('of concurrent creates for the last free place, lets exactly one in', async () => {
    const account = await newAccount(server);
    for (let i = 0; i < MAX_LIVE_KEYS_PER_ACCOUNT - 2; i++) await addKey(server, account.id, ['pets:read'], { name: `bulk ${i}` });
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => account.first.api.POST('/account/api-keys', { body: { name: `racer ${i}` } })));
    expect(answers.map((a) => a.response.status).sort()).toEqual([201, 409, 409, 409]);
    expect(await keyCounts(server, account.id)).toEqual({ all: 100, live: 100 });
  });

  it('refuses a mistyped key (one character changed) with 401 without any database lookup', async () => {
    const account = await newAccount(server); // issued, not used on this instance yet
    const secret = account.first.secret;
    const lookups = countKeyLookups(server);
    try {
      // One character of the random part, then one of the checksum: the CRC32 catches either.
      for (const at of [10, secret.length - 1]) {
        const mistyped = secret.slice(0, at) + (secret[at] === 'A' ? 'B' : 'A') + secret.slice(at + 1);
        expect(mistyped).not.toBe(secret);
        const { error, response } = await server.api.GET('/account', { headers: { authorization: `Bearer ${mistyped}` } });
        expect(response.status).toBe(401);
        expect(error?.code).toBe('unauthorized');
        expect(response.headers.get('www-authenticate')).toBe(INVALID_TOKEN);
      }
      expect(lookups.count(), 'lookups for mistyped keys').toBe(0);
      // The key as issued is looked up, once: the spy sees lookups when there are some.
      expect((await account.first.api.GET('/account')).response.status).toBe(200);
      expect(lookups.count(), 'the real key looked up once').toBe(1);
    } finally {
      lookups.restore();
    }
  });
});

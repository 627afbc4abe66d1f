import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { createPool } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { requestHash } from '../../src/idempotency/requestHash.js';
import { createDatabase, dropDatabase } from '../helpers/databases.js';
import { PREVIOUS_SCHEMA, previousVersion, type PreviousOrder } from '../helpers/previousVersion.js';
import { postgresServerUrl } from '../helpers/services.js';
import { databaseName } from '../helpers/testDatabase.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** The scopes migration 009 gave every key (011 added events:read and webhooks:manage to those with account:manage). */
const SCOPES_OF_009 = ['pets:read', 'pets:write', 'orders:read', 'orders:write', 'account:manage'];

const noop = () => {};
const MIGRATION = '009_accounts.sql';

/** A database the previous version filled (keys, orders, saved responses, pets), then migration 009 and a server on it. */
describe('migration 009 (accounts) on a database the previous version filled', () => {
  const adminUrl = postgresServerUrl();
  const name = databaseName('accounts_migration');
  let pool: pg.Pool;
  let server: TestServer;
  let applied: string[];
  const keys = {} as Record<'pro' | 'enterprise' | 'revoked' | 'unnamed', { id: number; key: string }>;
  const orders = {} as Record<'pro' | 'enterprise' | 'revoked', PreviousOrder[]>;
  let keyedOrder: PreviousOrder;
  let keyedPet: number;
  let before: Array<Record<string, unknown>>;
  /** The tables as 009 left them, read before the server opens the database (and applies any later migration). */
  const after = {} as Record<'accounts' | 'keys' | 'orders' | 'idempotency' | 'pets', Array<Record<string, unknown>>>;

  beforeAll(async () => {
    const url = await createDatabase(adminUrl, name);
    pool = createPool({ poolMax: 2, databaseUrl: url, connection: { connectionString: url } }).on('error', noop);
    expect((await migrate(pool, { upTo: PREVIOUS_SCHEMA })).at(-1)).toBe(PREVIOUS_SCHEMA);

    const old = previousVersion(pool);
    keys.pro = await old.createKey({ plan: 'pro', name: 'ci robot' });
    keys.enterprise = await old.createKey({ plan: 'enterprise', name: 'big customer', perMinute: 5000, perDay: 900_000 });
    keys.revoked = await old.createKey({ plan: 'free', name: 'leaked' });
    keys.unnamed = await old.createKey({ plan: 'free' });
    const pets = [];
    for (let i = 0; i < 8; i++) pets.push(await old.createPet(`pet ${i}`));
    orders.pro = [await old.placeOrder(keys.pro.id, pets[0]!), await old.placeOrder(keys.pro.id, pets[1]!)];
    await old.completeOrder(keys.pro.id, orders.pro[1]!.id);
    keyedPet = pets[2]!;
    keyedOrder = await old.placeOrder(keys.pro.id, keyedPet, { key: 'retry-1', requestHash: requestHash({ petId: keyedPet }) });
    orders.pro.push(keyedOrder);
    orders.enterprise = [await old.placeOrder(keys.enterprise.id, pets[3]!)];
    orders.revoked = [await old.placeOrder(keys.revoked.id, pets[4]!)];
    await old.revoke(keys.revoked.id);
    await old.use(keys.pro.key);
    before = (await pool.query(`SELECT id, name, plan, per_minute, per_day, created_at, last_used_at, revoked_at FROM api_keys ORDER BY id`)).rows;
    expect(before).toHaveLength(4);

    applied = await migrate(pool, { upTo: MIGRATION });
    const read = async (sql: string) => (await pool.query(sql)).rows;
    after.accounts = await read(`SELECT id, name, plan, per_minute, per_day, created_at FROM accounts ORDER BY id`);
    after.keys = await read(`SELECT id, account_id, name, scopes, prefix, expires_at, last_used_at, revoked_at FROM api_keys ORDER BY id`);
    after.orders = await read(`SELECT id, account_id FROM orders ORDER BY id`);
    after.idempotency = await read(`SELECT account_id, operation, key, status FROM idempotency_keys`);
    after.pets = await read(`SELECT count(*) AS pets, count(created_by) AS created FROM pets`);
    // The server applies whatever migrations follow; its own key is a new account's.
    server = await startTestServer({}, { db: { env: { DATABASE_URL: url }, drop: async () => {} } });
  });
  afterAll(async () => {
    await server?.close();
    await pool?.end();
    await dropDatabase(adminUrl, name);
  });

  const get = (key: string, path: string) => server.request(path, { key });

  it('applies 009 alone', () => {
    expect(applied).toEqual([MIGRATION]);
  });

  it("makes each key an account of its own: the key's id, name, plan, limits and creation time", () => {
    expect(after.accounts).toEqual(before.map(({ id, name, plan, per_minute, per_day, created_at }) => ({ id, name, plan, per_minute, per_day, created_at })));
    expect(after.keys).toEqual(
      before.map((k) => ({ id: k.id, account_id: k.id, name: k.name, scopes: SCOPES_OF_009, prefix: 'as_', expires_at: null, last_used_at: k.last_used_at, revoked_at: k.revoked_at })),
    );
    expect(before.find((k) => k.id === keys.pro.id)!.last_used_at).toBeInstanceOf(Date);
    expect(before.find((k) => k.id === keys.revoked.id)!.revoked_at).toBeInstanceOf(Date);
  });

  it('moves each order and saved response to its key’s account, and leaves pets without a creator', () => {
    const expected = Object.entries(orders).flatMap(([which, list]) => list.map((o) => ({ id: o.id, account_id: keys[which as keyof typeof orders].id })));
    expect(after.orders).toEqual(expected.sort((a, b) => a.id - b.id));
    expect(after.idempotency).toEqual([{ account_id: keys.pro.id, operation: 'placeOrder', key: 'retry-1', status: 201 }]);
    expect(after.pets).toEqual([{ pets: 8, created: 0 }]);
  });

  it('keeps every old key working as before: pets, its own orders, its account, its keys', async () => {
    expect((await get(keys.pro.key, '/v1/pets')).status).toBe(200);
    expect((await get(keys.unnamed.key, '/v1/pets')).status).toBe(200);
    for (const which of ['pro', 'enterprise'] as const) {
      const listed = await get(keys[which].key, '/v1/store/orders');
      expect(listed.status).toBe(200);
      expect(listed.body.map((o: PreviousOrder) => o.id)).toEqual(orders[which].map((o) => o.id));
    }
    const account = await get(keys.enterprise.key, '/v1/account');
    expect(account.status).toBe(200);
    expect(account.body).toEqual({
      id: keys.enterprise.id,
      name: 'big customer',
      plan: 'enterprise',
      limits: { perMinute: 5000, perDay: 900_000, openOrders: 250 },
      createdAt: (before.find((k) => k.id === keys.enterprise.id)!.created_at as Date).toISOString(),
    });
    expect((await get(keys.pro.key, '/v1/account')).body).toMatchObject({ id: keys.pro.id, name: 'ci robot', plan: 'pro', limits: { perMinute: 300, perDay: 10_000, openOrders: 25 } });
    const listed = await get(keys.pro.key, '/v1/account/api-keys');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      {
        id: keys.pro.id,
        name: 'ci robot',
        prefix: 'as_',
        scopes: SCOPES,
        createdAt: expect.any(String),
        lastUsedAt: expect.any(String),
        expiresAt: null,
        revokedAt: null,
      },
    ]);
    expect(listed.text).not.toContain(keys.pro.key.slice(3));
  });

  it('an old enterprise key keeps its own limits on the quota headers', async () => {
    const res = await get(keys.enterprise.key, '/v1/pets');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('5000');
  });

  it('a key revoked before stays refused', async () => {
    const res = await get(keys.revoked.key, '/v1/pets');
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('an Idempotency-Key used before replays its saved order for the same key, and names a new request for another account', async () => {
    const count = async () => (await pool.query<{ n: number }>('SELECT count(*) AS n FROM orders')).rows[0]!.n;
    const ordersBefore = await count();
    const retry = { method: 'POST', body: { petId: keyedPet }, headers: { 'idempotency-key': 'retry-1' } };
    const replay = await server.request('/v1/store/orders', { ...retry, key: keys.pro.key });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    // The saved answer, as the document now shapes an Order: with the hold migration 014 gave it.
    expect(replay.body).toEqual({ ...keyedOrder, expiresAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) });
    // Another account's request with the same Idempotency-Key is its own: the pet is taken.
    const other = await server.request('/v1/store/orders', { ...retry, key: keys.enterprise.key });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('pet_not_available');
    expect(await count()).toBe(ordersBefore);
  });

  it('gives a new account an id above every old one, and its key the ask_ format', async () => {
    const { accountId, key } = await server.app.accounts.createAccount({ plan: 'free', name: 'after' });
    expect(accountId).toBeGreaterThan(Math.max(...Object.values(keys).map((k) => k.id)));
    expect(key.secret).toMatch(/^ask_[0-9A-Za-z]{36}$/);
    expect(key.id).toBeGreaterThan(keys.unnamed.id);
    expect((await get(key.secret, '/v1/store/orders')).body).toEqual([]);
    expect((await get(key.secret, '/v1/account')).body).toMatchObject({ id: accountId, name: 'after', plan: 'free' });
  });
});

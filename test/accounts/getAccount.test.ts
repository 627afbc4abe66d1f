import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKey, databaseNow, insufficientScope, newAccount } from '../helpers/accounts.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

// Limits unlike the defaults, so the answer can only have come from this configuration.
const PLAN_LIMITS = {
  RATE_LIMIT_FREE: '45/900',
  RATE_LIMIT_PRO: '310/10100',
  RATE_LIMIT_BUSINESS: '1200/120000',
  OPEN_ORDERS_FREE: '4',
  OPEN_ORDERS_PRO: '26',
  OPEN_ORDERS_BUSINESS: '251',
  OPEN_ORDERS_ENTERPRISE: '252',
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer(PLAN_LIMITS);
});
afterAll(() => server?.close());

/** The account's creation time as the database holds it, in the API's form (UTC, milliseconds). */
async function createdAt(accountId: number): Promise<string> {
  const { rows } = await server.app.database.pool.query<{ t: number }>('SELECT floor(extract(epoch FROM created_at) * 1000)::float8 AS t FROM accounts WHERE id = $1', [accountId]);
  return new Date(rows[0]!.t).toISOString();
}

describe('getAccount', () => {
  it.each([
    ['free', { perMinute: 45, perDay: 900, openOrders: 4 }],
    ['pro', { perMinute: 310, perDay: 10100, openOrders: 26 }],
    ['business', { perMinute: 1200, perDay: 120000, openOrders: 251 }],
  ] as const)("answers a %s account with its plan's limits from the configuration", async (plan, limits) => {
    const before = await databaseNow(server);
    const account = await newAccount(server, { plan, name: `Shelter ${plan}` });
    const after = await databaseNow(server);
    const { data, response } = await account.first.api.GET('/account');
    expect(response.status).toBe(200);
    expect(response.headers.get('api-stability')).toBeNull(); // stable since 1.1.0
    expect(data).toEqual({ id: account.id, name: `Shelter ${plan}`, plan, limits, createdAt: await createdAt(account.id) });
    const created = Date.parse(data!.createdAt);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThanOrEqual(after);
  });

  it("answers an enterprise account with its own limits, not any plan's", async () => {
    const account = await newAccount(server, { plan: 'enterprise', name: 'Big Shelter', perMinute: 7, perDay: 70 });
    const { data, response } = await account.first.api.GET('/account');
    expect(response.status).toBe(200);
    expect(data).toEqual({ id: account.id, name: 'Big Shelter', plan: 'enterprise', limits: { perMinute: 7, perDay: 70, openOrders: 252 }, createdAt: await createdAt(account.id) });
    // The quota headers agree: the account's own per-minute limit.
    expect(response.headers.get('x-ratelimit-limit')).toBe('7');
  });

  it('answers every key of an account with the same account, and each account with its own', async () => {
    const a = await newAccount(server, { name: 'A' });
    const b = await newAccount(server, { name: 'B' });
    const a2 = await addKey(server, a.id, ['account:manage']);
    const [fromA1, fromA2, fromB] = await Promise.all([a.first.api.GET('/account'), a2.api.GET('/account'), b.first.api.GET('/account')]);
    expect(fromA1.data).toEqual(fromA2.data);
    expect(fromA1.data).toMatchObject({ id: a.id, name: 'A' });
    expect(fromB.data).toMatchObject({ id: b.id, name: 'B' });
    expect(b.id).not.toBe(a.id);
  });

  it('the server key (created first, business) is account 1 with an empty name', async () => {
    const { data } = await server.api.GET('/account');
    expect(data).toEqual({ id: 1, name: '', plan: 'business', limits: { perMinute: 1200, perDay: 120000, openOrders: 251 }, createdAt: await createdAt(1) });
  });

  it('refuses a key without account:manage with 403 insufficient_scope', async () => {
    const account = await newAccount(server);
    const reader = await addKey(server, account.id, ['pets:read', 'pets:write', 'orders:read', 'orders:write']);
    const { error, response } = await reader.api.GET('/account');
    expect(response.status).toBe(403);
    expect(error).toEqual({ code: 'insufficient_scope', message: 'This API key lacks the scope account:manage.', status: 403 });
    expect(response.headers.get('www-authenticate')).toBe(insufficientScope('account:manage'));
  });
});

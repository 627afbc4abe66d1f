import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_CACHE_TTL_MS } from '../../src/limits.js';
import { addKey, INVALID_TOKEN, keyFrom, newAccount } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

// A key's expiresAt is judged by the service's clock: this one, which moves only when a test says.
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server?.close());

describe('a key past its expiresAt', () => {
  it('answers 401 invalid_token exactly as a revoked key does, from the instant it expires', async () => {
    const account = await newAccount(server);
    const expiresAt = new Date(clock.now() + 5_000).toISOString();
    const created = await account.first.api.POST('/account/api-keys', { body: { name: 'short-lived', expiresAt } });
    expect(created.response.status).toBe(201);
    expect(created.data!.expiresAt).toBe(expiresAt);
    const expiring = keyFrom(server, created.data!);
    const revoked = await addKey(server, account.id);

    expect((await expiring.api.GET('/pets')).response.status).toBe(200); // cached, with its end
    expect((await revoked.api.GET('/pets')).response.status).toBe(200);
    await server.app.accounts.revoke({ id: revoked.id });

    clock.set(Date.parse(expiresAt) - 1);
    expect((await expiring.api.GET('/pets')).response.status).toBe(200);
    // Its end is judged on every request, cached answer or not.
    clock.advance(1);
    const expired = await expiring.api.GET('/pets');
    clock.advance(KEY_CACHE_TTL_MS + 1);
    const afterLookup = await expiring.api.GET('/pets');
    const gone = await revoked.api.GET('/pets');

    for (const { response, error } of [expired, afterLookup, gone]) {
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe(INVALID_TOKEN);
      expect(error).toEqual(gone.error);
    }
    expect(gone.error?.code).toBe('unauthorized');
    expect((await account.first.api.GET('/pets')).response.status).toBe(200);

    // The account still lists it, with its end.
    const { data } = await account.first.api.GET('/account/api-keys');
    expect(data!.find((k) => k.id === expiring.id)).toMatchObject({ expiresAt, revokedAt: null });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_CACHE_TTL_MS } from '../../src/limits.js';
import { addKey, keyRow, newAccount } from '../helpers/accounts.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { typedClient } from '../helpers/typedClient.js';

// Two instances of the service on one database, with one clock that moves only when a test says.
const clock = manualClock();
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  a = await startTestServer({}, { clock: clock.now });
  b = await startTestServer({}, { clock: clock.now, db: a.db });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

/** The status `secret` gets for GET /v1/pets from `server`. */
const statusOn = async (server: TestServer, secret: string) => (await typedClient(`${server.baseUrl}/v1`, secret).GET('/pets')).response.status;

describe('key changes made on one instance', () => {
  // Revocation and a 0 s roll across instances: test/auth/revocationAcrossInstances.test.ts.
  it("a key rolled on one instance keeps working on another until its expiresAt, then 401; its successor works there", async () => {
    const account = await newAccount(a);
    const key = await addKey(a, account.id);
    expect(await statusOn(b, key.secret)).toBe(200); // cached on B, with no end
    const rolled = await key.api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: key.id } }, body: { expiresInSeconds: 600 } });
    expect(rolled.response.status).toBe(201);
    expect(await statusOn(b, rolled.data!.secret)).toBe(200); // learnt from B's index

    const expiresAt = (await keyRow(a, key.id))!.expires_at!;
    expect(clock.now()).toBeLessThan(expiresAt - 1_000);
    clock.set(expiresAt - 1_000);
    expect(await statusOn(b, key.secret)).toBe(200);
    clock.set(expiresAt + 1_000);
    expect(await statusOn(b, key.secret)).toBe(401);
    expect(await statusOn(b, rolled.data!.secret)).toBe(200);
  });
});

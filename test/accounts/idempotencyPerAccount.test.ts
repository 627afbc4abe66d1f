import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addKey, newAccount, type TestKey } from '../helpers/accounts.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** POST /v1/pets with an Idempotency-Key, as `key`. */
const createPet = (key: TestKey, idempotencyKey: string, name = 'Shared') =>
  key.api.POST('/pets', { body: { name, categoryId: 3 }, params: { header: { 'Idempotency-Key': idempotencyKey } } });

describe('Idempotency-Keys belong to the account', () => {
  it("replays to another key of the same account, and another account's same key creates its own pet", async () => {
    const a = await newAccount(server);
    const a2 = await addKey(server, a.id, ['pets:write']);
    const b = await newAccount(server);
    const before = await server.petCount();

    const first = await createPet(a.first, 'shared-1');
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();

    const sameAccount = await createPet(a2, 'shared-1');
    expect(sameAccount.response.status).toBe(201);
    expect(sameAccount.response.headers.get('idempotent-replayed')).toBe('true');
    expect(sameAccount.data).toEqual(first.data);
    expect(sameAccount.response.headers.get('location')).toBe(first.response.headers.get('location'));

    const otherAccount = await createPet(b.first, 'shared-1');
    expect(otherAccount.response.status).toBe(201);
    expect(otherAccount.response.headers.get('idempotent-replayed')).toBeNull();
    expect(otherAccount.data!.id).not.toBe(first.data!.id);
    expect(otherAccount.data).toEqual({ ...first.data, id: otherAccount.data!.id });

    expect(await server.petCount()).toBe(before + 2);
  });

  it('holds another key of the same account to the first body: 422 for a different one, nothing stored', async () => {
    const a = await newAccount(server);
    const a2 = await addKey(server, a.id, ['pets:write']);
    expect((await createPet(a.first, 'shared-2', 'Tom')).response.status).toBe(201);
    const before = await server.petCount();
    const { error, response } = await createPet(a2, 'shared-2', 'Tim');
    expect(response.status).toBe(422);
    expect(error?.code).toBe('idempotency_key_reused');
    expect(await server.petCount()).toBe(before);
  });

  it('keeps replaying to the account after the key that made the request is rolled away', async () => {
    const a = await newAccount(server);
    const key = await addKey(server, a.id, ['pets:write', 'account:manage']);
    const first = await createPet(key, 'shared-3');
    const rolled = await key.api.POST('/account/api-keys/{keyId}/roll', { params: { path: { keyId: key.id } }, body: { expiresInSeconds: 0 } });
    expect(rolled.response.status).toBe(201);
    const successor = await server.request('/v1/pets', {
      key: rolled.data!.secret,
      body: { name: 'Shared', categoryId: 3 },
      headers: { 'idempotency-key': 'shared-3' },
    });
    expect(successor.status).toBe(201);
    expect(successor.headers.get('idempotent-replayed')).toBe('true');
    expect(successor.body).toEqual(first.data);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPet, deletePet, newAccount, patchPet, petRow, petView, type TestAccount } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Only the account that created a pet changes or removes it; pets from before accounts are changed by none. */
let server: TestServer;
let creator: TestAccount;
let other: TestAccount;
beforeAll(async () => {
  server = await startTestServer();
  [creator, other] = await Promise.all([newAccount(server), newAccount(server, 'free')]);
});
afterAll(() => server.close());

const FORBIDDEN_OTHER = (id: number) => ({
  code: 'forbidden',
  message: `Pet ${id} was created by another account; only its creator may change it.`,
  status: 403,
});

describe('who may change a pet', () => {
  it("another account's key gets 403 forbidden for updatePet and deletePet, and the pet stays as it was", async () => {
    const { id } = await createPet(server, { key: creator.key, name: 'Mine' });
    const before = await petView(server, id);
    const patched = await patchPet(server, id, { name: 'Theirs' }, { key: other.key });
    expect([patched.status, patched.body]).toEqual([403, FORBIDDEN_OTHER(id)]);
    const deleted = await deletePet(server, id, { key: other.key });
    expect([deleted.status, deleted.body]).toEqual([403, FORBIDDEN_OTHER(id)]);
    // Even with the right If-Match and `*`.
    for (const ifMatch of [before.etag!, '*']) {
      expect((await patchPet(server, id, { name: 'Theirs' }, { key: other.key, headers: { 'if-match': ifMatch } })).status).toBe(403);
    }
    expect(await petView(server, id)).toEqual(before);
    expect(await petRow(server, id)).toEqual({ name: 'Mine', status: 'available', version: 1, deleted: false });
    // The creator's other key (same account) may.
    const second = await server.app.accounts.createKey(creator.accountId, { name: 'second', scopes: ['pets:read', 'pets:write'] });
    expect((await patchPet(server, id, { name: 'Still mine' }, { key: second!.secret })).status).toBe(200);
    expect((await deletePet(server, id, { key: second!.secret })).status).toBe(204);
  });

  it('a pet created before accounts (no creator) is changed and removed by no account', async () => {
    const { id } = await createPet(server, { key: creator.key, name: 'Old timer' });
    await server.app.database.pool.query('UPDATE pets SET created_by = NULL WHERE id = $1', [id]);
    const before = await petView(server, id);
    const expected = { code: 'forbidden', message: `Pet ${id} was added before accounts existed; no account may change it.`, status: 403 };
    for (const account of [creator, other]) {
      const patched = await patchPet(server, id, { name: 'Renamed' }, { key: account.key });
      expect([patched.status, patched.body]).toEqual([403, expected]);
      const deleted = await deletePet(server, id, { key: account.key });
      expect([deleted.status, deleted.body]).toEqual([403, expected]);
    }
    expect((await patchPet(server, id, { name: 'Renamed' })).status).toBe(403); // the server's own business key
    expect(await petView(server, id)).toEqual(before);
    expect(await petRow(server, id)).toEqual({ name: 'Old timer', status: 'available', version: 1, deleted: false });
  });

  it("the creator's key with only pets:read gets 403 insufficient_scope, naming pets:write", async () => {
    const { id } = await createPet(server, { key: creator.key, name: 'Scoped' });
    const readOnly = await server.app.accounts.createKey(creator.accountId, { name: 'read only', scopes: ['pets:read'] });
    const before = await petView(server, id);
    for (const res of [await patchPet(server, id, { name: 'Nope' }, { key: readOnly!.secret }), await deletePet(server, id, { key: readOnly!.secret })]) {
      expect([res.status, res.body]).toEqual([403, { code: 'insufficient_scope', message: 'This API key lacks the scope pets:write.', status: 403 }]);
      expect(res.headers.get('www-authenticate')).toMatch(/ error="insufficient_scope", scope="pets:write"$/);
    }
    // It still reads.
    expect((await server.request(`/v1/pets/${id}`, { key: readOnly!.secret })).status).toBe(200);
    expect(await petView(server, id)).toEqual(before);
    expect((await petRow(server, id))!.deleted).toBe(false);
  });

  it('a key with pets:write but not pets:read may change its own pet', async () => {
    const { id } = await createPet(server, { key: creator.key, name: 'Write only' });
    const writeOnly = await server.app.accounts.createKey(creator.accountId, { name: 'write only', scopes: ['pets:write'] });
    const res = await patchPet(server, id, { name: 'Written' }, { key: writeOnly!.secret });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Written');
    expect((await server.request(`/v1/pets/${id}`, { key: writeOnly!.secret })).body.code).toBe('insufficient_scope');
  });
});

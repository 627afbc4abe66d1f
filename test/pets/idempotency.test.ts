import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPet, deletePet, patchPet, petRow, petView } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Idempotency-Key on updatePet and deletePet, as on createPet: the saved answer for the same request, 422 for another. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const withKey = (key: string, headers: Record<string, string> = {}) => ({ headers: { 'idempotency-key': key, ...headers } });

describe('updatePet with an Idempotency-Key', () => {
  it('the same key and body: the saved answer, with Idempotent-Replayed and the same ETag, not run again', async () => {
    const { id } = await createPet(server, { name: 'First' });
    const first = await patchPet(server, id, { name: 'Second' }, withKey('upd-1'));
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(first.headers.get('etag')).toBe('"2"');
    // Changed since by a request without the key: a replay must not undo it.
    expect((await patchPet(server, id, { name: 'Third' })).status).toBe(200);
    const replay = await patchPet(server, id, { name: 'Second' }, withKey('upd-1'));
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.headers.get('etag')).toBe('"2"');
    expect(replay.body).toEqual(first.body);
    expect(await petRow(server, id)).toEqual({ name: 'Third', status: 'available', version: 3, deleted: false });
  });

  it('the same key with another body: 422 idempotency_key_reused, and nothing changes', async () => {
    const { id } = await createPet(server, { name: 'Keyed' });
    expect((await patchPet(server, id, { name: 'Keyed II' }, withKey('upd-2'))).status).toBe(200);
    const before = await petView(server, id);
    const res = await patchPet(server, id, { name: 'Keyed III' }, withKey('upd-2'));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ code: 'idempotency_key_reused', message: 'This Idempotency-Key was used with a different request body.', status: 422 });
    expect(await petView(server, id)).toEqual(before);
  });

  it('the same key and body on another petId: 422 (the path is part of the request), the other pet unchanged', async () => {
    const a = await createPet(server, { name: 'A' });
    const b = await createPet(server, { name: 'B' });
    expect((await patchPet(server, a.id, { name: 'Renamed' }, withKey('upd-3'))).status).toBe(200);
    const before = await petView(server, b.id);
    const res = await patchPet(server, b.id, { name: 'Renamed' }, withKey('upd-3'));
    expect(res.status).toBe(422);
    // The message says what differs: the path, not the body.
    expect(res.body).toEqual({ code: 'idempotency_key_reused', message: `This Idempotency-Key was used for another path (petId ${a.id}, not petId ${b.id}).`, status: 422 });
    // Both differ: both said.
    const both = await patchPet(server, b.id, { name: 'Other' }, withKey('upd-3'));
    expect(both.body.message).toBe(`This Idempotency-Key was used for another path (petId ${a.id}, not petId ${b.id}) and with a different request body.`);
    expect(await petView(server, b.id)).toEqual(before);
  });

  it('a key saved before its path was (by an earlier version) says either may differ', async () => {
    const a = await createPet(server, { name: 'A' });
    const b = await createPet(server, { name: 'B' });
    expect((await patchPet(server, a.id, { name: 'Renamed' }, withKey('upd-6'))).status).toBe(200);
    await server.app.database.pool.query(`UPDATE idempotency_keys SET request_params = NULL WHERE key = 'upd-6'`);
    const res = await patchPet(server, b.id, { name: 'Renamed' }, withKey('upd-6'));
    expect(res.body).toEqual({ code: 'idempotency_key_reused', message: 'This Idempotency-Key was used with another path or a different request body.', status: 422 });
    // The same request still replays.
    expect((await patchPet(server, a.id, { name: 'Renamed' }, withKey('upd-6'))).headers.get('idempotent-replayed')).toBe('true');
  });

  it('an error answer is not saved: a retry with the same key runs afresh', async () => {
    const { id } = await createPet(server, { name: 'Retried' });
    const refused = await patchPet(server, id, { name: 'Retried II' }, withKey('upd-4', { 'if-match': '"9"' }));
    expect(refused.status).toBe(412);
    const retried = await patchPet(server, id, { name: 'Retried II' }, withKey('upd-4', { 'if-match': '"1"' }));
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(retried.body.name).toBe('Retried II');
  });

  it("a key is the account's: another account's same key and body is its own request (and here 403)", async () => {
    const { id } = await createPet(server, { name: 'Owned' });
    expect((await patchPet(server, id, { name: 'Owned II' }, withKey('upd-5'))).status).toBe(200);
    const other = await server.createKey('free');
    expect((await patchPet(server, id, { name: 'Owned II' }, { key: other, ...withKey('upd-5') })).body.code).toBe('forbidden');
  });
});

describe('deletePet with an Idempotency-Key', () => {
  it('the same key: 204 again with Idempotent-Replayed; without the key a second delete is 404', async () => {
    const { id } = await createPet(server, { name: 'Removed' });
    const first = await deletePet(server, id, withKey('del-1'));
    expect(first.status).toBe(204);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const replay = await deletePet(server, id, withKey('del-1'));
    expect(replay.status).toBe(204);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe('');
    expect((await deletePet(server, id)).status).toBe(404);
  });

  it('the same key on another petId: 422, and that pet stays', async () => {
    const a = await createPet(server, { name: 'A' });
    const b = await createPet(server, { name: 'B' });
    expect((await deletePet(server, a.id, withKey('del-2'))).status).toBe(204);
    const res = await deletePet(server, b.id, withKey('del-2'));
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ code: 'idempotency_key_reused', message: `This Idempotency-Key was used for another path (petId ${a.id}, not petId ${b.id}).`, status: 422 });
    expect((await petView(server, b.id)).status).toBe(200);
    expect((await petRow(server, b.id))!.deleted).toBe(false);
  });

  it('a key used for updatePet is another key for deletePet (keys are per operation)', async () => {
    const { id } = await createPet(server, { name: 'Both' });
    expect((await patchPet(server, id, { name: 'Both II' }, withKey('both'))).status).toBe(200);
    const res = await deletePet(server, id, withKey('both'));
    expect(res.status).toBe(204);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect((await petRow(server, id))!.deleted).toBe(true);
  });
});

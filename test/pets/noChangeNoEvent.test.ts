import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAllEvents, waitForEvents } from '../helpers/events.js';
import { createPet, newAccount, patchPet, petRow, petView } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/*
 * A merge patch that changes nothing writes nothing: no version, no pet.updated (so no webhook).
 * An event is listed only once older transactions have ended, so absence is shown by a marker:
 * the no-op patches, then a real change; once the real change's event is listed, any event of
 * the no-ops (committed before it began) would be listed before it.
 */
describe('updatePet with a patch that changes nothing', () => {
  it('answers 200 with the same ETag and writes no pet.updated: only the real change that follows is an event', async () => {
    const { key } = await newAccount(server);
    const { id, etag } = await createPet(server, { key, name: 'Same', categoryId: 7, status: 'available' });
    const before = await petView(server, id);
    const noOps = [{}, { name: 'Same' }, { categoryId: 7 }, { status: 'available' }, { name: 'Same', categoryId: 7, status: 'available' }];
    for (const patch of noOps) {
      const res = await patchPet(server, id, patch, { key });
      expect([JSON.stringify(patch), res.status, res.headers.get('etag')]).toEqual([JSON.stringify(patch), 200, etag]);
      expect(res.body).toEqual(before.body);
    }
    expect((await petRow(server, id))!.version).toBe(1);

    const real = await patchPet(server, id, { name: 'Changed', categoryId: 7 }, { key });
    expect(real.status).toBe(200);
    expect(real.headers.get('etag')).not.toBe(etag);
    await waitForEvents(server, key, 1, 'type=pet.updated');
    const events = await readAllEvents(server, key);
    expect(events.map((e) => [e.type, e.data.object.name])).toEqual([
      ['pet.created', 'Same'],
      ['pet.updated', 'Changed'],
    ]);
    expect((await petRow(server, id))!.version).toBe(2);
  });

  it('still checks If-Match first: a stale ETag is 412 even for an empty patch', async () => {
    const { key } = await newAccount(server);
    const { id, etag } = await createPet(server, { key, name: 'Old' });
    await patchPet(server, id, { name: 'New' }, { key });
    const res = await patchPet(server, id, {}, { key, headers: { 'if-match': etag } });
    expect(res.status).toBe(412);
    expect(res.body.code).toBe('precondition_failed');
  });
});

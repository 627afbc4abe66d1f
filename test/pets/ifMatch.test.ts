import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPet, deletePet, patchPet, petRow, petView } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** If-Match on updatePet and deletePet (RFC 9110 §13.1.1): strong comparison, `*`, lists. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const ifMatch = (value: string) => ({ headers: { 'if-match': value } });

/** A pet at version 2: its current ETag and the stale one it had before. */
async function changedPet(name = 'Rex') {
  const { id, etag: stale } = await createPet(server, { name });
  const res = await patchPet(server, id, { name: `${name} II` });
  const current = res.headers.get('etag')!;
  expect([stale, current]).toEqual(['"1"', '"2"']);
  return { id, stale, current };
}

async function expectPreconditionFailed(res: { status: number; body: unknown }, id: number) {
  expect(res.status).toBe(412);
  expect(res.body).toEqual({ code: 'precondition_failed', message: `Pet ${id} has changed since the ETag in If-Match.`, status: 412 });
}

describe('If-Match', () => {
  it('the current ETag: 200, and the answer carries the next one', async () => {
    const { id, current } = await changedPet();
    const res = await patchPet(server, id, { categoryId: 9 }, ifMatch(current));
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe('"3"');
  });

  it('a stale ETag: 412 precondition_failed in the Error shape, and nothing changes', async () => {
    const { id, stale } = await changedPet();
    const before = await petView(server, id);
    await expectPreconditionFailed(await patchPet(server, id, { name: 'Overwrite' }, ifMatch(stale)), id);
    expect(await petView(server, id)).toEqual(before);
    expect(await petRow(server, id)).toEqual({ name: 'Rex II', status: 'available', version: 2, deleted: false });
  });

  it('* matches any existing pet', async () => {
    const { id } = await changedPet();
    const res = await patchPet(server, id, { name: 'Starred' }, ifMatch('*'));
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Starred');
  });

  it('* on a pet that does not exist is 404, not a change', async () => {
    expect((await patchPet(server, 987654321, { name: 'Ghost' }, ifMatch('*'))).status).toBe(404);
  });

  it('a weak tag never matches, even with the current version (If-Match compares strongly)', async () => {
    const { id, current } = await changedPet();
    const before = await petView(server, id);
    await expectPreconditionFailed(await patchPet(server, id, { name: 'Weak' }, ifMatch(`W/${current}`)), id);
    await expectPreconditionFailed(await deletePet(server, id, ifMatch(`W/${current}`)), id);
    expect(await petView(server, id)).toEqual(before);
  });

  it.each([
    ['an unknown tag first', (c: string) => `"x", ${c}`],
    ['no space after the comma', (c: string) => `"x",${c}`],
    ['the stale tag first', (c: string) => `"1", ${c}`],
    ['the current tag first', (c: string) => `${c}, "x"`],
  ])('a list holding the current ETag matches (%s)', async (_, header) => {
    const { id, current } = await changedPet();
    const res = await patchPet(server, id, { name: 'Listed' }, ifMatch(header(current)));
    expect(res.status).toBe(200);
  });

  it.each(['"x", "y"', '"1", W/"2"', '2', '"2'])('a list or tag without the current ETag is 412 (%s)', async (header) => {
    const { id } = await changedPet();
    await expectPreconditionFailed(await patchPet(server, id, { name: 'Unlisted' }, ifMatch(header)), id);
    expect((await petRow(server, id))!.version).toBe(2);
  });

  it('deletePet with a stale If-Match: 412, and the pet is still there; with the current one: 204', async () => {
    const { id, stale, current } = await changedPet();
    const before = await petView(server, id);
    await expectPreconditionFailed(await deletePet(server, id, ifMatch(stale)), id);
    expect(await petView(server, id)).toEqual(before);
    expect((await petRow(server, id))!.deleted).toBe(false);
    expect((await deletePet(server, id, ifMatch(current))).status).toBe(204);
    expect((await petView(server, id)).status).toBe(404);
  });

  it("a change by another writer (an order's placement) makes the tag stale too", async () => {
    const { id, etag } = await createPet(server, { name: 'Ordered' });
    expect((await server.request('/v1/store/orders', { body: { petId: id } })).status).toBe(201);
    await expectPreconditionFailed(await patchPet(server, id, { name: 'Late' }, ifMatch(etag)), id);
    const { etag: now } = await petView(server, id);
    expect(now).toBe('"2"');
    expect((await patchPet(server, id, { name: 'Late' }, ifMatch(now!))).status).toBe(200);
  });
});

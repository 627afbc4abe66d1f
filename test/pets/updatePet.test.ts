import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPet, patchPet, petRow, petView } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('PATCH /v1/pets/{petId} (updatePet)', () => {
  it('answers 200 with the changed pet and a new strong ETag, which getPet then answers with', async () => {
    const { id, etag } = await createPet(server, { name: 'Rex', categoryId: 2 });
    expect(etag).toBe('"1"');
    const res = await patchPet(server, id, { name: 'Rex the Second' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id, name: 'Rex the Second', categoryId: 2, status: 'available' });
    const newTag = res.headers.get('etag');
    expect(newTag).toMatch(/^"[^"]+"$/); // strong: no W/
    expect(newTag).not.toBe(etag);
    expect(await petView(server, id)).toEqual({ status: 200, body: res.body, etag: newTag });
  });

  it('a merge patch changes only the fields it names', async () => {
    const { id } = await createPet(server, { name: 'Kit', categoryId: 3, status: 'available' });
    const byField = [
      [{ categoryId: 4 }, { name: 'Kit', categoryId: 4, status: 'available' }],
      [{ status: 'sold' }, { name: 'Kit', categoryId: 4, status: 'sold' }],
      [{ name: 'Kat' }, { name: 'Kat', categoryId: 4, status: 'sold' }],
      [{ name: 'Kot', categoryId: 5, status: 'pending' }, { name: 'Kot', categoryId: 5, status: 'pending' }],
    ] as const;
    const tags: string[] = [];
    for (const [patch, after] of byField) {
      const res = await patchPet(server, id, patch);
      expect(res.status, JSON.stringify(patch)).toBe(200);
      expect(res.body).toEqual({ id, ...after });
      expect((await petView(server, id)).body).toEqual({ id, ...after });
      tags.push(res.headers.get('etag')!);
    }
    // Every change is a new tag.
    expect(new Set(tags).size).toBe(4);
  });

  it.each(['application/merge-patch+json', 'application/json', 'application/merge-patch+json; charset=utf-8', 'Application/JSON'])(
    'accepts %s',
    async (type) => {
      const { id } = await createPet(server, { name: 'Ada' });
      const res = await patchPet(server, id, { name: 'Ada Lovelace' }, { headers: { 'content-type': type } });
      expect(res.status).toBe(200);
      expect(res.body.name).toBe('Ada Lovelace');
      expect((await petRow(server, id))!.name).toBe('Ada Lovelace');
    },
  );

  it('an empty patch answers 200 with the pet as it is and the same ETag', async () => {
    const { id } = await createPet(server, { name: 'Still', categoryId: 6 });
    await patchPet(server, id, { name: 'Still here' }); // version 2: the tag is not just the first one
    const before = await petView(server, id);
    const res = await patchPet(server, id, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual(before.body);
    expect(res.headers.get('etag')).toBe(before.etag);
    expect(await petView(server, id)).toEqual(before);
    expect((await petRow(server, id))!.version).toBe(2);
  });

  it('a patch to the values the pet already has keeps its ETag (the representation is the same)', async () => {
    const { id, etag } = await createPet(server, { name: 'Same', categoryId: 7 });
    const res = await patchPet(server, id, { name: 'Same', categoryId: 7, status: 'available' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(etag);
  });

  it('categoryId up to 2^53-1 is stored and answered exactly, and found by listPets?categoryId', async () => {
    const { id } = await createPet(server, { name: 'Far' });
    const res = await patchPet(server, id, { categoryId: Number.MAX_SAFE_INTEGER });
    expect(res.status).toBe(200);
    expect(res.body.categoryId).toBe(Number.MAX_SAFE_INTEGER);
    expect((await server.request(`/v1/pets?categoryId=${Number.MAX_SAFE_INTEGER}`)).body).toEqual([res.body]);
  });

  it('answers 404 pet_not_found for a pet that does not exist', async () => {
    const res = await patchPet(server, 987654321, { name: 'Ghost' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'pet_not_found', message: 'Pet 987654321 not found.', status: 404 });
  });
});

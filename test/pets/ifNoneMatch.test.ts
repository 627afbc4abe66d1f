import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPet, deletePet, nextPath, patchPet } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/** Conditional reads (RFC 9110 §13.1.2): 304 with no body while the representation is unchanged. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'https://pets.test' });
});
afterAll(() => server.close());

const get = (path: string, ifNoneMatch?: string) => server.request(path, { headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } });

describe('getPet with If-None-Match', () => {
  it('the current ETag: 304, no body, with the headers a 200 carries', async () => {
    const { id, etag } = await createPet(server, { name: 'Cached' });
    const full = await get(`/v1/pets/${id}`);
    expect(full.headers.get('etag')).toBe(etag);
    const res = await get(`/v1/pets/${id}`, etag);
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(res.headers.get('etag')).toBe(etag);
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit-policy', 'ratelimit']) {
      expect(res.headers.get(name), name).not.toBeNull();
    }
    expect(res.headers.get('x-ratelimit-limit')).toBe(full.headers.get('x-ratelimit-limit'));
    // getPet is deprecated: a 304 says so as a 200 does.
    expect(res.headers.get('deprecation')).toBe('@1795219200');
    expect(res.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.get('link')).toBe('<https://pets.test/v1/pets>; rel="successor-version"');
  });

  it.each([
    ['another tag', '"999"', 200],
    ['a list holding the current tag', '"999", "1"', 304],
    ['the weak form of the current tag (If-None-Match compares weakly)', 'W/"1"', 304],
    ['*', '*', 304],
  ])('%s: %i', async (_, header, status) => {
    const { id } = await createPet(server, { name: 'Tagged' });
    const res = await get(`/v1/pets/${id}`, header);
    expect(res.status).toBe(status);
    if (status === 200) expect(res.body).toEqual({ id, name: 'Tagged', categoryId: 1, status: 'available' });
    else expect(res.text).toBe('');
  });

  it('once the pet changes, the old ETag gets 200 with the new one', async () => {
    const { id, etag } = await createPet(server, { name: 'Before' });
    const changed = await patchPet(server, id, { name: 'After' });
    const res = await get(`/v1/pets/${id}`, etag);
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('After');
    expect(res.headers.get('etag')).toBe(changed.headers.get('etag'));
    expect(res.headers.get('etag')).not.toBe(etag);
  });

  it('a removed pet is 404 whatever the If-None-Match', async () => {
    const { id, etag } = await createPet(server, { name: 'Gone' });
    expect((await deletePet(server, id)).status).toBe(204);
    for (const header of [etag, '*']) expect((await get(`/v1/pets/${id}`, header)).status).toBe(404);
  });
});

describe('listPets with If-None-Match', () => {
  const PAGE = '/v1/pets?limit=3&categoryId=40';
  let pets: number[];
  beforeAll(async () => {
    pets = [];
    for (let i = 0; i < 5; i++) pets.push((await createPet(server, { name: `Listed ${i}`, categoryId: 40 })).id);
  });

  it("each page carries a weak ETag of its content; sent back it gets 304 with no body", async () => {
    const first = await get(PAGE);
    expect(first.status).toBe(200);
    expect(first.body.map((p: { id: number }) => p.id)).toEqual(pets.slice(0, 3));
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^W\/"[A-Za-z0-9_-]+"$/);
    const again = await get(PAGE, etag);
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    expect(again.headers.get('x-ratelimit-remaining')).not.toBeNull();
    // Another page, another tag.
    const second = await get(nextPath(first.headers.get('link'))!);
    expect(second.body.map((p: { id: number }) => p.id)).toEqual(pets.slice(3));
    expect(second.headers.get('etag')).not.toBe(etag);
    expect((await get(PAGE, second.headers.get('etag')!)).status).toBe(200);
  });

  it('a pet added beyond the page leaves it unchanged: still 304', async () => {
    const etag = (await get(PAGE)).headers.get('etag')!;
    pets.push((await createPet(server, { name: 'Late', categoryId: 40 })).id);
    expect((await get(PAGE, etag)).status).toBe(304);
  });

  it('after a pet on the page changes, the same If-None-Match gets 200 with a new ETag; the new one then 304', async () => {
    const etag = (await get(PAGE)).headers.get('etag')!;
    expect((await patchPet(server, pets[1]!, { name: 'Renamed' })).status).toBe(200);
    const res = await get(PAGE, etag);
    expect(res.status).toBe(200);
    expect(res.body[1]).toEqual({ id: pets[1], name: 'Renamed', categoryId: 40, status: 'available' });
    const newTag = res.headers.get('etag')!;
    expect(newTag).not.toBe(etag);
    expect((await get(PAGE, newTag)).status).toBe(304);
  });

  it("a pet removed from the page changes the page's ETag", async () => {
    const etag = (await get(PAGE)).headers.get('etag')!;
    expect((await deletePet(server, pets[0]!)).status).toBe(204);
    const res = await get(PAGE, etag);
    expect(res.status).toBe(200);
    expect(res.body.map((p: { id: number }) => p.id)).toEqual(pets.slice(1, 4));
    expect(res.headers.get('etag')).not.toBe(etag);
  });
});

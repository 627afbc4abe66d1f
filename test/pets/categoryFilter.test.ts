import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../generated/openapi.js';
import { createPet, nextPath } from '../helpers/pets.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

type Pet = components['schemas']['Pet'];
const statuses = ['available', 'pending', 'sold'] as const;

/** listPets?categoryId=, alone and with status, paged by Link exactly as the unfiltered list. */
let server: TestServer;
const pets: Pet[] = [];
beforeAll(async () => {
  server = await startTestServer();
  // 24 pets: categories 1..4 in turn, statuses in a cycle of 3, so every (category, status) pair has 2.
  for (let i = 0; i < 24; i++) {
    const categoryId = 1 + (i % 4);
    const status = statuses[i % 3]!;
    const { id } = await createPet(server, { name: `Pet ${i}`, categoryId, status });
    pets.push({ id, name: `Pet ${i}`, categoryId, status });
  }
});
afterAll(() => server.close());

/** Follows rel="next" from `first`: every page's pets and every next link. */
async function walk(first: string) {
  const pages: Pet[][] = [];
  const links: string[] = [];
  for (let path: string | undefined = first; path; ) {
    const res = await server.request(path);
    expect(res.status).toBe(200);
    pages.push(res.body);
    const link = res.headers.get('link');
    if (link) links.push(link);
    path = nextPath(link);
  }
  return { pages, links };
}

describe('listPets?categoryId', () => {
  it('returns only that category, in id order', async () => {
    const { data, response } = await server.api.GET('/pets', { params: { query: { categoryId: 3 } } });
    expect(response.status).toBe(200);
    expect(data).toEqual(pets.filter((p) => p.categoryId === 3));
    expect(data).toHaveLength(6);
  });

  it.each(statuses)('combined with status=%s: both filters', async (status) => {
    const { data } = await server.api.GET('/pets', { params: { query: { categoryId: 2, status } } });
    expect(data).toEqual(pets.filter((p) => p.categoryId === 2 && p.status === status));
    expect(data).toHaveLength(2);
  });

  it('a category without pets: an empty page and no link', async () => {
    const res = await server.request('/v1/pets?categoryId=999');
    expect([res.status, res.body, res.headers.get('link')]).toEqual([200, [], null]);
  });

  it('a Link walk with limit 2 visits every pet of the category exactly once, keeping categoryId in each next link', async () => {
    const { pages, links } = await walk('/v1/pets?limit=2&categoryId=1');
    expect(pages.map((p) => p.length)).toEqual([2, 2, 2]);
    expect(pages.flat()).toEqual(pets.filter((p) => p.categoryId === 1));
    expect(links).toHaveLength(2);
    for (const link of links) {
      const params = new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]!).searchParams;
      expect([params.get('limit'), params.get('categoryId'), params.get('status')]).toEqual(['2', '1', null]);
    }
  });

  it('with status too, each next link keeps both filters', async () => {
    const { pages, links } = await walk('/v1/pets?limit=1&categoryId=4&status=sold');
    expect(pages.flat()).toEqual(pets.filter((p) => p.categoryId === 4 && p.status === 'sold'));
    expect(links).toHaveLength(1);
    const params = new URL(/^<([^>]+)>/.exec(links[0]!)![1]!).searchParams;
    expect([params.get('categoryId'), params.get('status')]).toEqual(['4', 'sold']);
  });

  it('a pet of the category added during the walk is on a later page; none is listed twice', async () => {
    const first = await server.request('/v1/pets?limit=2&categoryId=2');
    const late = await createPet(server, { name: 'Late', categoryId: 2 });
    const { pages } = await walk(nextPath(first.headers.get('link'))!);
    const ids = [...first.body, ...pages.flat()].map((p: Pet) => p.id);
    expect(ids).toEqual([...pets.filter((p) => p.categoryId === 2).map((p) => p.id), late.id]);
  });

  it.each([
    ['0', /^querystring\/categoryId must be >= 1$/],
    ['-1', /^querystring\/categoryId must be >= 1$/],
    ['9007199254740992', /^querystring\/categoryId must be <= 9007199254740991$/],
    ['1.5', /^querystring\/categoryId must be integer$/],
    ['abc', /^querystring\/categoryId must be integer$/],
  ])('categoryId=%s is 400 validation_failed', async (value, message) => {
    const res = await server.request(`/v1/pets?categoryId=${value}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
  });
});

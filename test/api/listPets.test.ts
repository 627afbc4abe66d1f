import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeCursor } from '../../src/pagination/cursor.js';
import type { components, operations } from '../../generated/openapi.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { nextPageQuery } from '../helpers/nextPage.js';

let server: TestServer;
const statuses = ['available', 'pending', 'sold'] as const;
type Pet = components['schemas']['Pet'];
let created: Pet[] = [];

beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'http://pets.test:8080' });
  for (let i = 0; i < 45; i++) {
    const { data } = await server.api.POST('/pets', { body: { name: `pet ${i}`, categoryId: 1 + (i % 4), status: statuses[i % 3]! } });
    created.push(data!);
  }
});
afterAll(() => server.close());

type ListQuery = NonNullable<operations['listPets']['parameters']['query']>;

/** Follows rel="next" links from `first` with the typed client, returning every page and every link. */
async function allPages(first: ListQuery) {
  const pages: Pet[][] = [];
  const links: string[] = [];
  let query: ListQuery | undefined = first;
  while (query) {
    const { data, response } = await server.api.GET('/pets', { params: { query } });
    expect(response.status).toBe(200);
    pages.push(data!);
    const link = response.headers.get('link');
    if (link) links.push(/^<([^>]+)>/.exec(link)![1]!);
    query = nextPageQuery(link) as ListQuery | undefined;
  }
  return { pages, links };
}

describe('GET /v1/pets', () => {
  it('returns 20 pets by default, ordered by id, with a next link', async () => {
    const { data, response } = await server.api.GET('/pets');
    expect(data!.map((p) => p.id)).toEqual(created.slice(0, 20).map((p) => p.id));
    expect(response.headers.get('link')).toMatch(/^<http:\/\/pets\.test:8080\/v1\/pets\?limit=20&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
  });

  it('pages through everything by cursor, each pet exactly once, no link on the last page', async () => {
    const { pages, links } = await allPages({ limit: 10 });
    expect(pages.map((p) => p.length)).toEqual([10, 10, 10, 10, 5]);
    expect(pages.flat().map((p) => p.id)).toEqual(created.map((p) => p.id));
    expect(links).toHaveLength(4);
    for (const link of links) expect(new URL(link).searchParams.get('limit')).toBe('10');
  });

  it('filters by status and keeps the filter and limit in the next link', async () => {
    const { pages, links } = await allPages({ status: 'pending', limit: 4 });
    const expected = created.filter((p) => p.status === 'pending').map((p) => p.id);
    expect(pages.flat().map((p) => p.id)).toEqual(expected);
    expect(pages.flat().every((p) => p.status === 'pending')).toBe(true);
    for (const link of links) {
      const params = new URL(link).searchParams;
      expect([params.get('status'), params.get('limit')]).toEqual(['pending', '4']);
    }
  });

  it('has no next link when the page is exactly the rest', async () => {
    const { data, response } = await server.api.GET('/pets', { params: { query: { limit: 45 } } });
    expect(data).toHaveLength(45);
    expect(response.headers.get('link')).toBeNull();
  });

  it('accepts limit 1 and 100', async () => {
    expect((await server.api.GET('/pets', { params: { query: { limit: 1 } } })).data).toHaveLength(1);
    expect((await server.api.GET('/pets', { params: { query: { limit: 100 } } })).data).toHaveLength(45);
  });

  it.each([
    ['limit=0', /querystring\/limit must be >= 1/],
    ['limit=101', /querystring\/limit must be <= 100/],
    ['limit=abc', /querystring\/limit must be integer/],
    ['limit=5&limit=6', /querystring\/limit must be integer/],
    ['status=adopted', /querystring\/status must be one of: available, pending, sold/],
    // Every cursor the service makes is base64url (openapi.yaml's pattern).
    ['cursor=%25%25%25', /querystring\/cursor must match pattern/],
  ])('rejects %s with 400 (raw: a typed client cannot send most of these)', async (query, message) => {
    const res = await server.request(`/v1/pets?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
  });

  it.each(['nonsense', Buffer.from('v2:10').toString('base64url'), Buffer.from('v1:-4').toString('base64url')])(
    'rejects cursor %s with 400 invalid_cursor',
    async (cursor) => {
      const res = await server.request(`/v1/pets?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('invalid_cursor');
    },
  );

  it('starts after the cursor position', async () => {
    const { data } = await server.api.GET('/pets', { params: { query: { limit: 3, cursor: encodeCursor(created[10]!.id) } } });
    expect(data!.map((p) => p.id)).toEqual(created.slice(11, 14).map((p) => p.id));
  });
});

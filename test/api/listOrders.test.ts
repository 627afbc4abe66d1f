import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components, operations } from '../../generated/openapi.js';
import { encodeCursor } from '../../src/pagination/cursor.js';
import { addPet } from '../helpers/orders.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';
import { nextPageQuery } from '../helpers/nextPage.js';

type Order = components['schemas']['Order'];
type ListQuery = NonNullable<operations['listOrders']['parameters']['query']>;

let server: TestServer;
/** The server key's 25 orders in the order placed: every third cancelled, every fifth (of the rest) completed. */
const orders: Order[] = [];

beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'http://orders.test:8080' });
  for (let i = 0; i < 25; i++) {
    const petId = await addPet(server, 'available', `pet ${i}`);
    const { data } = await server.api.POST('/store/orders', { body: { petId } });
    const path = { params: { path: { orderId: data!.id } } };
    if (i % 3 === 0) orders.push((await server.api.POST('/store/orders/{orderId}/cancel', path)).data!);
    else if (i % 5 === 0) orders.push((await server.api.POST('/store/orders/{orderId}/complete', path)).data!);
    else orders.push(data!);
  }
});
afterAll(() => server.close());

/** Follows rel="next" links from `first` with the typed client, returning every page and every link. */
async function allPages(first: ListQuery) {
  const pages: Order[][] = [];
  const links: string[] = [];
  let query: ListQuery | undefined = first;
  while (query) {
    const { data, response } = await server.api.GET('/store/orders', { params: { query } });
    expect(response.status).toBe(200);
    expect(response.headers.get('api-stability')).toBe('experimental');
    pages.push(data!);
    const link = response.headers.get('link');
    if (link) links.push(/^<([^>]+)>/.exec(link)![1]!);
    query = nextPageQuery(link) as ListQuery | undefined;
  }
  return { pages, links };
}

describe('GET /v1/store/orders (listOrders)', () => {
  it('returns 20 orders by default, oldest first, with a next link', async () => {
    const { data, response } = await server.api.GET('/store/orders');
    expect(data).toEqual(orders.slice(0, 20));
    expect(response.headers.get('link')).toMatch(
      /^<http:\/\/orders\.test:8080\/v1\/store\/orders\?limit=20&cursor=[A-Za-z0-9_-]+>; rel="next"$/,
    );
  });

  it('pages through every order by cursor, each exactly once, no link on the last page', async () => {
    const { pages, links } = await allPages({ limit: 7 });
    expect(pages.map((p) => p.length)).toEqual([7, 7, 7, 4]);
    expect(pages.flat()).toEqual(orders);
    expect(links).toHaveLength(3);
  });

  it.each(['placed', 'completed', 'cancelled'] as const)('filters by status %s and keeps the filter and limit in the next link', async (status) => {
    const { pages, links } = await allPages({ status, limit: 2 });
    const expected = orders.filter((o) => o.status === status);
    expect(expected.length).toBeGreaterThan(2);
    expect(pages.flat()).toEqual(expected);
    for (const link of links) {
      const params = new URL(link).searchParams;
      expect([params.get('status'), params.get('limit')]).toEqual([status, '2']);
    }
  });

  it('has no next link when the page is exactly the rest, and starts after a cursor', async () => {
    const all = await server.api.GET('/store/orders', { params: { query: { limit: 25 } } });
    expect(all.data).toHaveLength(25);
    expect(all.response.headers.get('link')).toBeNull();
    const after = await server.api.GET('/store/orders', { params: { query: { limit: 3, cursor: encodeCursor(orders[10]!.id) } } });
    expect(after.data).toEqual(orders.slice(11, 14));
  });

  it('is empty for a key that has placed no orders', async () => {
    const res = await server.request('/v1/store/orders', { key: await server.createKey('free') });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers.get('link')).toBeNull();
  });

  it.each([
    ['limit=0', /querystring\/limit must be >= 1/],
    ['limit=101', /querystring\/limit must be <= 100/],
    ['status=pending', /querystring\/status must be one of: placed, completed, cancelled/],
  ])('rejects %s with 400 validation_failed', async (query, message) => {
    const res = await server.request(`/v1/store/orders?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
    expect(res.headers.get('api-stability')).toBe('experimental');
  });

  it.each(['nonsense', Buffer.from('v2:10').toString('base64url')])('rejects cursor %s with 400 invalid_cursor', async (cursor) => {
    const res = await server.request(`/v1/store/orders?cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_cursor');
  });
});

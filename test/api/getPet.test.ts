import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ PUBLIC_BASE_URL: 'https://pets.test' });
});
afterAll(() => server.close());

function expectDeprecationHeaders(headers: Headers) {
  expect(headers.get('deprecation')).toBe('@1795219200'); // 2026-11-21T00:00:00Z
  expect(headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  expect(headers.get('link')).toBe('<https://pets.test/v1/pets>; rel="successor-version"');
}

describe('GET /v1/pets/{petId} (deprecated)', () => {
  it('returns the pet with Deprecation, Sunset and a successor Link', async () => {
    const created = await server.api.POST('/pets', { body: { name: 'Kit', categoryId: 3, status: 'pending' } });
    const id = created.data!.id;
    const { data, response } = await server.api.GET('/pets/{petId}', { params: { path: { petId: id } } });
    expect(response.status).toBe(200);
    expect(data).toEqual({ id, name: 'Kit', categoryId: 3, status: 'pending' });
    expectDeprecationHeaders(response.headers);
  });

  it('answers 404 pet_not_found, still with the deprecation headers', async () => {
    const { error, response } = await server.api.GET('/pets/{petId}', { params: { path: { petId: 987654321 } } });
    expect(response.status).toBe(404);
    expect(error).toEqual({ code: 'pet_not_found', message: 'Pet 987654321 not found.', status: 404 });
    expectDeprecationHeaders(response.headers);
  });

  // Not integers, or out of range: only the raw client can send these.
  it.each(['abc', '0', '-1', '1.5', '9007199254740992'])('rejects petId %s with 400', async (id) => {
    const res = await server.request(`/v1/pets/${id}`);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(/^params\/petId /);
    expectDeprecationHeaders(res.headers);
  });
});

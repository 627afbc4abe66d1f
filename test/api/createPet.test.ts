import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());


describe('POST /v1/pets', () => {
  it('creates a pet, assigns status available, and points Location at it', async () => {
    const { data, response } = await server.api.POST('/pets', { body: { name: 'Rex', categoryId: 7 } });
    expect(response.status).toBe(201);
    expect(data).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 7, status: 'available' });
    expect(response.headers.get('location')).toBe(`${server.baseUrl}/v1/pets/${data!.id}`);
    const again = await server.request(response.headers.get('location')!);
    expect(again.body).toEqual(data);
  });

  it('makes Location absolute with PUBLIC_BASE_URL, path prefix included, as Link is', async () => {
    const behindProxy = await startTestServer({ PUBLIC_BASE_URL: 'https://example.org/animals/' });
    try {
      const res = await behindProxy.request('/v1/pets', { body: { name: 'Rex', categoryId: 7 } });
      expect(res.headers.get('location')).toBe(`https://example.org/animals/v1/pets/${res.body.id}`);
    } finally {
      await behindProxy.close();
    }
  });

  // Raw from here on: exact bytes, and bodies a typed client would not let anyone send.
  it('keeps a given status and the largest exact categoryId', async () => {
    const res = await server.request('/v1/pets', {
      body: '{"name":"Tom","categoryId":9007199254740991,"status":"sold"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).toBe(201);
    expect(res.text).toContain('"categoryId":9007199254740991');
    expect(res.body.status).toBe('sold');
  });

  // Each body is rejected with 400, a message naming the field, and nothing stored.
  const invalid: Array<[string, string, RegExp]> = [
    ['string categoryId', '{"name":"a","categoryId":"7"}', /body\/categoryId must be integer/],
    ['numeric name', '{"name":123,"categoryId":7}', /body\/name must be string/],
    ['boolean categoryId', '{"name":"a","categoryId":true}', /body\/categoryId must be integer/],
    ['null name', '{"name":null,"categoryId":7}', /body\/name must be string/],
    ['missing name', '{"categoryId":7}', /body\/name is required/],
    ['missing categoryId', '{"name":"a"}', /body\/categoryId is required/],
    ['unknown property', '{"name":"a","categoryId":7,"owner":"me"}', /body\/owner is not a known property/],
    ['categoryId 0', '{"name":"a","categoryId":0}', /body\/categoryId must be >= 1/],
    ['categoryId beyond 2^53', '{"name":"a","categoryId":9007199254740993}', /body\/categoryId must be <= 9007199254740991/],
    ['fractional categoryId', '{"name":"a","categoryId":1.5}', /body\/categoryId must be integer/],
    ['empty name', '{"name":"","categoryId":7}', /body\/name must NOT have fewer than 1 characters/],
    ['name of 201 characters', JSON.stringify({ name: 'x'.repeat(201), categoryId: 7 }), /body\/name must NOT have more than 200 characters/],
    ['blank name', '{"name":"   ","categoryId":7}', /body\/name must contain a visible character/],
    ['name with NUL', '{"name":"a\\u0000b","categoryId":7}', /^body\/name must not contain U\+0000 \(NUL\)$/],
    ['unknown status', '{"name":"a","categoryId":7,"status":"adopted"}', /body\/status must be one of: available, pending, sold/],
    ['null status', '{"name":"a","categoryId":7,"status":null}', /body\/status must be string/],
    ['array body', '[{"name":"a","categoryId":7}]', /body must be object/],
    ['string body', '"Rex"', /body must be object/],
  ];
  it.each(invalid)('rejects %s with 400', async (_case, body, message) => {
    const before = await server.petCount();
    const res = await server.request('/v1/pets', { body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.message).toMatch(message);
    expect(await server.petCount()).toBe(before);
  });

  it('rejects malformed JSON with invalid_json', async () => {
    const res = await server.request('/v1/pets', { body: '{"name": "a",', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
  });

  it('rejects a missing body with 400', async () => {
    const res = await server.request('/v1/pets', { method: 'POST' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'validation_failed', message: 'body is required (application/json)', status: 400 });
  });

  it('rejects a body over 64 KiB with 413', async () => {
    const before = await server.petCount();
    const res = await server.request('/v1/pets', { body: { name: 'a', categoryId: 7, pad: 'x'.repeat(70_000) } });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('payload_too_large');
    expect(await server.petCount()).toBe(before);
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'])(
    'rejects Content-Type %s with 415',
    async (type) => {
      const res = await server.request('/v1/pets', { body: '{"name":"a","categoryId":7}', headers: { 'content-type': type } });
      expect(res.status).toBe(415);
      expect(res.body.code).toBe('unsupported_media_type');
    },
  );

  it('authenticates before validating: no key and a bad body get 401', async () => {
    const res = await server.request('/v1/pets', { key: null, body: '{bad', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
  });
});

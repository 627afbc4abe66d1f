import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** POSTs raw bytes as application/json. */
function post(body: Buffer | string, headers: Record<string, string> = {}) {
  return fetch(`${server.baseUrl}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', ...headers },
    body,
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { code: string; message: string } }));
}

describe('bodies the service must not guess about', () => {
  it('refuses invalid UTF-8 with 400 instead of storing U+FFFD', async () => {
    const before = await server.petCount();
    const bytes = Buffer.concat([Buffer.from('{"name":"Re'), Buffer.from([0xc3, 0x28]), Buffer.from('x","categoryId":1}')]);
    const res = await post(bytes);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_json');
    expect(res.body.message).toMatch(/UTF-8/);
    expect(await server.petCount()).toBe(before);
  });

  it.each(['9007199254740990.6', '4503599627370496.5', '1.00000000000000001', '12.5e-1'])(
    'refuses categoryId %s (it would be rounded) with 400',
    async (literal) => {
      const before = await server.petCount();
      const res = await post(`{"name":"Rex","categoryId":${literal}}`);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(await server.petCount()).toBe(before);
    },
  );

  it.each([
    ['7.0', 7],
    ['7e0', 7],
    ['0.7e1', 7],
  ])('takes categoryId %s as the integer it is', async (literal, value) => {
    const res = await server.request('/v1/pets', { body: `{"name":"Rex","categoryId":${literal}}`, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(201);
    expect(res.body.categoryId).toBe(value);
  });

  it('refuses a content-encoded body with 415 (RFC 9110 §15.5.16) and stores nothing', async () => {
    const before = await server.petCount();
    const res = await post(gzipSync('{"name":"Zipped","categoryId":1}'), { 'content-encoding': 'gzip' });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('unsupported_media_type');
    expect(res.body.message).toMatch(/Content-Encoding/);
    expect(await server.petCount()).toBe(before);
    expect((await post('{"name":"Plain","categoryId":1}', { 'content-encoding': 'identity' })).status).toBe(201);
  });
});

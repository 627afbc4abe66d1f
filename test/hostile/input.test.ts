import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

const deep = (n: number) => '{"name":"a","categoryId":1,"x":' + '['.repeat(n) + ']'.repeat(n) + '}';

/** Each body gets a 4xx Error (checked against openapi.yaml by the request helper) and stores nothing. */
const bodies: Array<[string, string, string?]> = [
  ['deep nesting', deep(5000)],
  ['a lone surrogate', '{"name":"a\\ud800b","categoryId":1}'],
  ['a lone low surrogate', '{"name":"\\udc00","categoryId":1}'],
  ['a NUL byte', '{"name":"a\\u0000","categoryId":1}'],
  ['a __proto__ key', '{"name":"a","categoryId":1,"__proto__":{"admin":true}}'],
  ['a constructor.prototype key', '{"name":"a","categoryId":1,"constructor":{"prototype":{"admin":true}}}'],
  ['a number beyond 2^53', '{"name":"a","categoryId":18446744073709551616}'],
  ['1e400', '{"name":"a","categoryId":1e400}'],
  ['a negative id', '{"name":"a","categoryId":-1}'],
  ['a very long name', JSON.stringify({ name: 'x'.repeat(60_000), categoryId: 1 })],
  ['truncated JSON', '{"name":"a","categoryId":'],
  ['trailing garbage', '{"name":"a","categoryId":1} x'],
  ['an empty body', ''],
  ['JSON null', 'null'],
  ['a UTF-16 charset', '{"name":"a","categoryId":1}', 'application/json; charset=utf-16'],
  ['multipart', '--x\r\n\r\n--x--', 'multipart/form-data; boundary=x'],
  ['no content type', '{"name":"a","categoryId":1}', ''],
];

describe('hostile input never causes a 5xx or stores anything', () => {
  it.each(bodies)('%s', async (_name, body, type = 'application/json') => {
    const before = await server.petCount();
    const headers: Record<string, string> = type ? { 'content-type': type } : {};
    const res = await server.request('/v1/pets', { method: 'POST', body, headers });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body).toMatchObject({ code: expect.any(String), status: res.status });
    expect(await server.petCount()).toBe(before);
  });

  it('keeps the last of duplicate JSON keys only after validating it', async () => {
    const res = await server.request('/v1/pets', { body: '{"name":"a","categoryId":1,"categoryId":"x"}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
  });

  it('answers oversized headers with 431 in the Error shape', async () => {
    const raw = await new Promise<string>((resolve) => {
      const socket = net.connect(Number(new URL(server.baseUrl).port), '127.0.0.1', () => {
        socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`);
      });
      let data = '';
      socket.on('data', (d) => (data += d));
      socket.on('end', () => resolve(data));
      socket.on('error', () => resolve(data));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({
      code: 'headers_too_large',
      message: 'Request headers are too large.',
      status: 431,
    });
  });
});

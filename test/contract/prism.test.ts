import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestThroughPrism, startPrism, type PrismProxy } from '../helpers/prism.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

/**
 * The responses the property test does not reach (413, 415, 429), checked by Prism's
 * validating proxy; and proof that the check fails when a server breaks the document.
 */
describe('Prism validating proxy', () => {
  let server: TestServer;
  let prism: PrismProxy;
  beforeAll(async () => {
    server = await startTestServer();
    prism = await startPrism(`${server.baseUrl}/v1`);
  }, 60_000);
  afterAll(async () => {
    await prism?.close();
    await server?.close();
  });

  it('passes 413 for a body over 64 KiB', async () => {
    const res = await requestThroughPrism(prism, server.key, '/v1/pets', { body: { name: 'x'.repeat(70_000), categoryId: 1 } });
    expect(res.status).toBe(413);
  });

  it('passes 415 for a body that is not JSON', async () => {
    const res = await requestThroughPrism(prism, server.key, '/v1/pets', { body: 'name=Rex', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
    expect(res.requestViolations.map((v) => v.code)).toEqual([415]);
  });

  it('passes 429 with Retry-After once the quota is used', async () => {
    const key = await server.createKey('enterprise', { perMinute: 2, perDay: 100 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await requestThroughPrism(prism, key, '/v1/pets')).status);
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe('the Prism check itself', () => {
  let liar: http.Server;
  let prism: PrismProxy;
  beforeAll(async () => {
    // A server that answers listPets with a body and headers openapi.yaml does not allow.
    liar = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.setHeader('x-request-id', 'liar');
      res.end(JSON.stringify([{ id: 'one', name: 'Rex' }]));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    prism = await startPrism(`http://127.0.0.1:${(liar.address() as AddressInfo).port}/v1`);
  }, 60_000);
  afterAll(async () => {
    await prism?.close();
    liar?.close();
  });

  it('fails a test when the response breaks openapi.yaml', async () => {
    await expect(requestThroughPrism(prism, 'as_any', '/v1/pets')).rejects.toThrow(/Prism found the response breaks openapi.yaml/);
  });
});

import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_CACHE_TTL_MS } from '../../src/limits.js';
import { manualClock } from '../helpers/clock.js';
import { startTestServer, type TestServer } from '../helpers/testServer.js';

// The key cache's ages are read from this clock, which moves only when a test says.
const clock = manualClock();
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { clock: clock.now });
});
afterAll(() => server.close());

const unknownKey = `as_${'A'.repeat(43)}`;

describe('bearer authentication', () => {
  const noKey = { headers: { authorization: null } };
  it.each([
    ['GET', '/v1/pets', () => server.api.GET('/pets', noKey)],
    ['POST', '/v1/pets', () => server.api.POST('/pets', { body: { name: 'Rex', categoryId: 1 }, ...noKey })],
    ['GET', '/v1/pets/1', () => server.api.GET('/pets/{petId}', { params: { path: { petId: 1 } }, ...noKey })],
  ])('%s %s without a key gets 401 with a Bearer challenge', async (_method, _path, call) => {
    const { response, error } = await call();
    expect(response.status).toBe(401);
    expect(error?.code).toBe('unauthorized');
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
  });

  it.each([
    ['an unknown key', `Bearer ${unknownKey}`],
    ['a malformed key', 'Bearer not-a-key'],
    ['an empty bearer token', 'Bearer '],
  ])('%s gets 401 invalid_token', async (_name, authorization) => {
    const { response: res } = await server.api.GET('/pets', { headers: { authorization } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store", error="invalid_token"');
  });

  it('keeps the connection of a refused request that had no body (only an unread body closes it)', async () => {
    // Answered at once, before Node's parser has marked the GET complete: the connection stays.
    const get = await fetch(`${server.baseUrl}/v1/pets`);
    await get.arrayBuffer();
    expect([get.status, get.headers.get('connection')]).toEqual([401, 'keep-alive']);
    const post = await fetch(`${server.baseUrl}/v1/pets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"Rex","categoryId":1}' });
    await post.arrayBuffer();
    expect([post.status, post.headers.get('connection')]).toEqual([401, 'close']);
  });

  it('treats another scheme as no credentials', async () => {
    const { response: res } = await server.api.GET('/pets', { headers: { authorization: `Basic ${unknownKey}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
  });

  it('accepts the scheme in any case', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const { response: res } = await server.api.GET('/pets', { headers: { authorization: `${scheme} ${server.key}` } });
      expect(res.status).toBe(200);
    }
  });

  it('stores keys only as SHA-256 hashes, and records their last use later, in a batch, not on the request path', async () => {
    const key = await server.createKey('pro');
    const hash = createHash('sha256').update(key).digest('hex');
    const lastUsed = async () => {
      const { rows } = await server.app.database.pool.query('SELECT key_hash, last_used_at FROM api_keys');
      expect(rows.map((r) => r.key_hash)).toContain(hash);
      expect(JSON.stringify(rows)).not.toContain(key);
      return rows.find((r) => r.key_hash === hash)!.last_used_at as Date | null;
    };
    const used = clock.now();
    await server.api.GET('/pets', { headers: { authorization: `Bearer ${key}` } });
    expect(await lastUsed()).toBeNull();
    await server.app.flushKeyUsage();
    expect((await lastUsed())?.getTime()).toBe(used);
  });

  it('refuses a revoked key as soon as its cached answer is older than the cache ttl (1 s)', async () => {
    const key = await server.createKey('free');
    const auth = { headers: { authorization: `Bearer ${key}` } };
    expect((await server.api.GET('/pets', auth)).response.status).toBe(200); // now cached as valid
    await server.app.accounts.revoke({ key });
    clock.advance(KEY_CACHE_TTL_MS);
    expect((await server.api.GET('/pets', auth)).response.status).toBe(200); // the cached answer, still fresh
    clock.advance(1);
    // Past the ttl the answer is looked up again before the request is answered: never served stale.
    const { response: res } = await server.api.GET('/pets', auth);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

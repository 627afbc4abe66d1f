import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  it.each([
    ['GET', '/v1/pets'],
    ['POST', '/v1/pets'],
    ['GET', '/v1/pets/1'],
  ])('%s %s without a key gets 401 with a Bearer challenge', async (method, path) => {
    const res = await server.request(path, { method, key: null });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('unauthorized');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
  });

  it.each([
    ['an unknown key', `Bearer ${unknownKey}`],
    ['a malformed key', 'Bearer not-a-key'],
    ['an empty bearer token', 'Bearer '],
  ])('%s gets 401 invalid_token', async (_name, header) => {
    const res = await server.request('/v1/pets', { key: null, headers: { authorization: header } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store", error="invalid_token"');
  });

  it('treats another scheme as no credentials', async () => {
    const res = await server.request('/v1/pets', { key: null, headers: { authorization: `Basic ${unknownKey}` } });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="animal-store"');
  });

  it('accepts the scheme in any case', async () => {
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const res = await server.request('/v1/pets', { key: null, headers: { authorization: `${scheme} ${server.key}` } });
      expect(res.status).toBe(200);
    }
  });

  it('stores keys only as SHA-256 hashes and records their last use', async () => {
    const key = await server.createKey('pro');
    await server.request('/v1/pets', { key });
    const { rows } = await server.app.database.pool.query('SELECT key_hash, last_used_at FROM api_keys');
    const hashes = rows.map((r) => r.key_hash);
    expect(hashes).toContain(createHash('sha256').update(key).digest('hex'));
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(rows.find((r) => r.key_hash === createHash('sha256').update(key).digest('hex'))!.last_used_at).not.toBeNull();
  });

  it('refuses a revoked key within 5 seconds, even right after using it', async () => {
    const key = await server.createKey('free');
    expect((await server.request('/v1/pets', { key })).status).toBe(200); // now cached as valid
    await server.app.apiKeys.revoke({ key });
    clock.advance(4_000); // the verifier's bound on a cached answer's age (4 s, under the 5 s promised)
    const res = await server.request('/v1/pets', { key });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });
});

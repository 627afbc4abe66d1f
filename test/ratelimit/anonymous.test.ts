import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../helpers/clock.js';
import { createTestDatabase, type TestDatabase } from '../helpers/testDatabase.js';
import type { TestServer } from '../helpers/testServer.js';
import { cleanupSharedRedis, startTestServer, storeEnvs } from './helpers.js';

afterAll(() => cleanupSharedRedis());

const ANONYMOUS = { RATE_LIMIT_ANONYMOUS: '5/100' };

type ExtraHeaders = Record<string, string>;

/** GET /v1/pets through the typed client without the server's key, with `headers` added. */
const anonymous = (s: TestServer, headers: ExtraHeaders = {}) => s.api.GET('/pets', { headers: { authorization: null, ...headers } });
type Result = Awaited<ReturnType<typeof anonymous>>;

describe.each(storeEnvs())('requests without a valid key, with the %s', (_name, storeEnv) => {
  // One database for the lot: these requests carry no valid key and store nothing; each test's server is its own.
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  /** A server of the test's own (fresh counters), on a clock that stands still: no minute ends mid-test. */
  async function start(env: Record<string, string> = {}) {
    server = await startTestServer({ ...storeEnv(), ...ANONYMOUS, ...env }, { db, clock: manualClock().now });
    return server;
  }

  async function sequence(s: TestServer, requests: ExtraHeaders[]): Promise<Result[]> {
    const out: Result[] = [];
    for (const headers of requests) out.push(await anonymous(s, headers));
    return out;
  }

  const xff = (ip: string): ExtraHeaders => ({ 'x-forwarded-for': ip });
  const malformed: ExtraHeaders = { authorization: 'Bearer nope' };

  function expectAnonymous401s(results: Result[], firstRemaining = 4) {
    results.forEach(({ response: res, error }, i) => {
      expect(res.status).toBe(401);
      expect(error?.code).toBe('unauthorized');
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(firstRemaining - i));
      expect(res.headers.get('ratelimit-policy')).toBe('"minute";q=5;w=60, "day";q=100;w=86400');
      expect(res.headers.get('ratelimit')).toMatch(/^"minute";r=\d+;t=\d+, "day";r=\d+;t=\d+$/);
    });
  }

  function expect429({ response: res, error }: Result) {
    expect(res.status).toBe(429);
    expect(error?.code).toBe('rate_limited');
    expect(res.headers.get('x-ratelimit-limit')).toBe('5');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  }

  it('are limited per client IP: 5 get 401, the 6th gets 429', async () => {
    const s = await start();
    expectAnonymous401s(await sequence(s, [{}, {}, {}, {}, {}]));
    expect429(await anonymous(s));
    // A malformed key is no key: the same IP bucket, already used up.
    expect429(await anonymous(s, malformed));
  });

  it('count requests with a malformed key against the same IP bucket', async () => {
    const s = await start();
    const requests = [{}, malformed, {}, malformed, malformed];
    const responses = await sequence(s, requests);
    expectAnonymous401s(responses);
    responses.forEach(({ response: res }, i) =>
      expect(res.headers.get('www-authenticate')).toBe(
        requests[i] === malformed ? 'Bearer realm="animal-store", error="invalid_token"' : 'Bearer realm="animal-store"',
      ),
    );
    expect429(await anonymous(s, malformed));
    expect429(await anonymous(s));
  });

  it('ignore X-Forwarded-For without TRUST_PROXY: every request is 127.0.0.1', async () => {
    const s = await start();
    expectAnonymous401s(await sequence(s, ['203.0.113.1', '203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.5'].map(xff)));
    expect429(await anonymous(s, xff('203.0.113.6')));
    expect429(await anonymous(s));
  });

  it('use X-Forwarded-For with TRUST_PROXY=true: one bucket per forwarded address', async () => {
    const s = await start({ TRUST_PROXY: 'true' });
    const one = xff('203.0.113.1');
    expectAnonymous401s(await sequence(s, [one, one, one, one, one]));
    expect429(await anonymous(s, one));
    expectAnonymous401s(await sequence(s, [xff('203.0.113.2')]));
    expectAnonymous401s(await sequence(s, [{}])); // the proxy's own address, 127.0.0.1
  });

  it("show the address's count on a CORS preflight, which is not counted (the store is read, not hit)", async () => {
    const origin = 'https://app.example';
    const s = await start({ CORS_ORIGINS: origin });
    const preflight = async () => {
      const res = await fetch(`${s.baseUrl}/v1/pets`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'GET' } });
      await res.arrayBuffer();
      return [res.status, res.headers.get('x-ratelimit-limit'), res.headers.get('x-ratelimit-remaining'), res.headers.get('ratelimit-policy')];
    };
    const policy = '"minute";q=5;w=60, "day";q=100;w=86400';
    expect(await preflight()).toEqual([204, '5', '5', policy]);
    expectAnonymous401s(await sequence(s, [{}, {}]));
    expect(await preflight()).toEqual([204, '5', '3', policy]);
    expect(await preflight()).toEqual([204, '5', '3', policy]);
    expectAnonymous401s(await sequence(s, [{}, {}, {}]), 2);
    expect(await preflight()).toEqual([204, '5', '0', policy]);
  });
});

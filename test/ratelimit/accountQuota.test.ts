import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/accounts/repository.js';
import { manualClock } from '../helpers/clock.js';
import { withoutRedis } from '../helpers/services.js';
import type { TestServer } from '../helpers/testServer.js';
import { cleanupSharedRedis, listOne, sendMany, startTestServer, statuses, storeEnvs, twoInstancesSharingRedis } from './helpers.js';

afterAll(() => cleanupSharedRedis());

/** A new free account with two keys: its first, and one added to it as createApiKey does. */
async function twoKeysOfOneAccount(server: TestServer): Promise<[string, string]> {
  const { accountId, key } = await server.app.accounts.createAccount({ plan: 'free', name: 'two keys' });
  const second = await server.app.accounts.createKey(accountId, { name: 'second', scopes: SCOPES });
  return [key.secret, second!.secret];
}

const remaining = (results: Array<{ response: Response }>) => results.map((r) => r.response.headers.get('x-ratelimit-remaining'));

describe.each(storeEnvs())('two keys of one account share its quota, with the %s', (_name, env) => {
  // Time stands still: no minute ends mid-test.
  const clock = manualClock();
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(env(), { clock: clock.now });
  });
  afterAll(() => server?.close());

  it.each([
    ['the first key', 0],
    ['the second key', 1],
  ] as const)('60 requests a minute between them (alternating), the 61st refused when %s sends it', async (_which, last) => {
    const keys = await twoKeysOfOneAccount(server);
    let sent = 0;
    const admitted = await sendMany(60, () => listOne(server, keys[sent++ % 2]), 1);
    expect(statuses(admitted)).toEqual(Array(60).fill(200));
    // One counter: each key's answer counts the other's requests too.
    expect(remaining(admitted)).toEqual(Array.from({ length: 60 }, (_, i) => String(59 - i)));
    const refused = await listOne(server, keys[last]);
    expect(refused.response.status).toBe(429);
    expect(refused.error?.code).toBe('rate_limited');
    expect((await listOne(server, keys[1 - last])).response.status).toBe(429);
    // Another account's key is not touched by it.
    expect((await listOne(server, await server.createKey('free'))).response.status).toBe(200);
  });
});

describe.skipIf(withoutRedis())('two keys of one account on two instances sharing Redis', () => {
  // One clock for both instances (as NTP gives them), standing still.
  const clock = manualClock();
  const { a, b } = twoInstancesSharingRedis(clock.now);

  it.each([
    ['A (the first key)', 0],
    ['B (the second key)', 1],
  ] as const)('key 1 on A, key 2 on B: 60 allowed in total, the 61st refused on %s, then on the other', async (_where, last) => {
    const keys = await twoKeysOfOneAccount(a());
    const servers = [a(), b()];
    let sent = 0;
    const admitted = await sendMany(60, () => {
      const i = sent++ % 2;
      return listOne(servers[i]!, keys[i]);
    }, 1);
    expect(statuses(admitted)).toEqual(Array(60).fill(200));
    expect(remaining(admitted)).toEqual(Array.from({ length: 60 }, (_, i) => String(59 - i)));
    const refused = await listOne(servers[last]!, keys[last]);
    expect(refused.response.status).toBe(429);
    expect(refused.error?.code).toBe('rate_limited');
    expect((await listOne(servers[1 - last]!, keys[1 - last])).response.status).toBe(429);
  });

  it('120 requests at once, half per key and instance: exactly 60 admitted', async () => {
    const keys = await twoKeysOfOneAccount(b());
    const servers = [a(), b()];
    let sent = 0;
    const responses = await sendMany(120, () => {
      const i = sent++ % 2;
      return listOne(servers[i]!, keys[i]);
    }, 120);
    const count = (status: number) => responses.filter((r) => r.response.status === status).length;
    expect({ 200: count(200), 429: count(429) }).toEqual({ 200: 60, 429: 60 });
  });
});

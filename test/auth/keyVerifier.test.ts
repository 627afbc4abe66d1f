import { describe, expect, it } from 'vitest';
import { generateApiKey, hashApiKey, parseAuthorization } from '../../src/auth/apiKey.js';
import { createKeyVerifier } from '../../src/auth/keyVerifier.js';
import type { ApiKeyIdentity } from '../../src/auth/apiKeys.js';

const identity: ApiKeyIdentity = { id: 1, plan: 'free', perMinute: null, perDay: null };

function setup() {
  let now = 0;
  const lookups: string[] = [];
  let answer: ApiKeyIdentity | undefined = identity;
  const verifier = createKeyVerifier({
    lookup: async (hash) => {
      lookups.push(hash);
      return answer;
    },
    maxAgeMs: 4000,
    refreshAfterMs: 2000,
    now: () => now,
  });
  return {
    verifier,
    lookups,
    tick: (ms: number) => (now += ms),
    revoke: () => (answer = undefined),
  };
}

describe('key verifier cache', () => {
  it('keeps known keys however many unknown ones are tried', async () => {
    const lookups: string[] = [];
    const known = generateApiKey();
    const verifier = createKeyVerifier({
      lookup: async (hash) => {
        lookups.push(hash);
        return hash === hashApiKey(known) ? identity : undefined;
      },
      maxEntries: 2,
    });
    expect(await verifier.verify(known)).toEqual(identity);
    for (let i = 0; i < 10; i++) expect(await verifier.verify(generateApiKey())).toBeUndefined();
    expect(verifier.cachedAnswer(known)).toEqual({ identity });
    expect(await verifier.verify(known)).toEqual(identity);
    expect(lookups.filter((h) => h === hashApiKey(known))).toHaveLength(1);
  });

  it('looks a known key up once, then serves it from memory', async () => {
    const t = setup();
    const key = generateApiKey();
    for (let i = 0; i < 5; i++) expect(await t.verifier.verify(key)).toEqual(identity);
    expect(t.lookups).toEqual([hashApiKey(key)]);
  });

  it('refreshes in the background after refreshAfter, and stops trusting the answer after maxAge', async () => {
    const t = setup();
    const key = generateApiKey();
    await t.verifier.verify(key);
    t.revoke();
    t.tick(2500);
    expect(await t.verifier.verify(key)).toEqual(identity); // stale-but-valid answer, refresh started
    await new Promise((r) => setImmediate(r));
    expect(t.lookups).toHaveLength(2);
    expect(await t.verifier.verify(key)).toBeUndefined(); // the refresh saw the revocation
  });

  it('never uses an answer older than maxAge', async () => {
    const t = setup();
    const key = generateApiKey();
    await t.verifier.verify(key);
    t.revoke();
    t.tick(4000);
    expect(await t.verifier.verify(key)).toBeUndefined();
  });

  it('shares one lookup among concurrent first requests', async () => {
    const t = setup();
    const key = generateApiKey();
    await Promise.all(Array.from({ length: 10 }, () => t.verifier.verify(key)));
    expect(t.lookups).toHaveLength(1);
  });

  it('caches unknown keys too, so repeating a bad key costs no lookup', async () => {
    const t = setup();
    t.revoke();
    const key = generateApiKey();
    await t.verifier.verify(key);
    await t.verifier.verify(key);
    expect(t.lookups).toHaveLength(1);
  });
});

describe('Authorization header parsing', () => {
  const key = generateApiKey();
  it.each([
    [undefined, { kind: 'missing' }],
    ['', { kind: 'missing' }],
    ['Basic abc', { kind: 'missing' }],
    ['Bearer', { kind: 'malformed' }],
    ['Bearer short', { kind: 'malformed' }],
    [`Bearer ${key} extra`, { kind: 'malformed' }],
    [`bearer ${key}`, { kind: 'key', key }],
    [`Bearer \t${key} `, { kind: 'key', key }],
  ])('%j -> %j', (header, expected) => {
    expect(parseAuthorization(header)).toEqual(expected);
  });
});

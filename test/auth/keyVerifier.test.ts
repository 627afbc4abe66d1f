import { describe, expect, it } from 'vitest';
import { bearerKey, generateApiKey, hashApiKey } from '../../src/auth/apiKey.js';
import { createKeyVerifier, type IssuedKeys } from '../../src/auth/keyVerifier.js';
import type { ApiKeyIdentity } from '../../src/auth/apiKeys.js';

const identity: ApiKeyIdentity = { id: 1, plan: 'free', perMinute: null, perDay: null };

/** An index of issued keys that has every key: these tests are about the cache in front of the database. */
const everyKey: IssuedKeys = { mayExist: () => true, nextRefresh: async () => {} };

function setup() {
  let now = 0;
  const lookups: string[] = [];
  let answer: ApiKeyIdentity | undefined = identity;
  const verifier = createKeyVerifier({
    lookup: async (hash) => {
      lookups.push(hash);
      return answer;
    },
    issued: everyKey,
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
      issued: everyKey,
      maxEntries: 2,
    });
    expect(await verifier.verify(known)).toEqual(identity);
    for (let i = 0; i < 10; i++) expect(await verifier.verify(generateApiKey())).toBeUndefined();
    expect(verifier.cachedAnswer(known)).toEqual(identity);
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

describe('key verifier and the index of issued keys', () => {
  /** An index holding `issued` hashes; a refresh adds those in `pending`. */
  function indexed(issued: string[], pending: string[] = []) {
    const hashes = new Set(issued);
    let refreshes = 0;
    const index: IssuedKeys = {
      mayExist: (hash) => hashes.has(hash),
      nextRefresh: async () => {
        refreshes++;
        for (const h of pending.splice(0)) hashes.add(h);
      },
    };
    return { index, refreshes: () => refreshes };
  }

  it('refuses keys the index lacks without a database lookup, however many', async () => {
    const lookups: string[] = [];
    const { index } = indexed([]);
    const verifier = createKeyVerifier({ lookup: async (h) => (lookups.push(h), identity), issued: index });
    for (let i = 0; i < 100; i++) expect(await verifier.verify(generateApiKey())).toBeUndefined();
    expect(lookups).toEqual([]);
  });

  it('accepts a key issued since the last refresh once the next refresh has it', async () => {
    const key = generateApiKey();
    const lookups: string[] = [];
    const { index, refreshes } = indexed([], [hashApiKey(key)]);
    const verifier = createKeyVerifier({ lookup: async (h) => (lookups.push(h), identity), issued: index });
    expect(await verifier.verify(key)).toEqual(identity);
    expect(refreshes()).toBe(1);
    expect(lookups).toEqual([hashApiKey(key)]);
  });

  it('serves a known key from the cache by the key itself: no hash, no lookup', async () => {
    const key = generateApiKey();
    const lookups: string[] = [];
    const { index } = indexed([hashApiKey(key)]);
    const verifier = createKeyVerifier({ lookup: async (h) => (lookups.push(h), identity), issued: index });
    expect(verifier.cachedAnswer(key)).toBeUndefined();
    await verifier.verify(key);
    expect(verifier.cachedAnswer(key)).toEqual(identity);
    expect(lookups).toHaveLength(1);
  });

  it('answers 503-worthy errors when the index cannot be refreshed for a key it lacks', async () => {
    const index: IssuedKeys = { mayExist: () => false, nextRefresh: () => Promise.reject(new Error('Connection terminated')) };
    const verifier = createKeyVerifier({ lookup: async () => identity, issued: index });
    await expect(verifier.verify(generateApiKey())).rejects.toThrow('Connection terminated');
  });
});

describe('Authorization header parsing', () => {
  const key = generateApiKey();
  it.each([
    [undefined, 'missing'],
    ['', 'missing'],
    ['   ', 'missing'],
    ['Basic abc', 'missing'],
    ['Bearer', 'malformed'],
    ['Bearer short', 'malformed'],
    [`Bearer ${key} extra`, 'malformed'],
    [`Bearer ${key.slice(0, -1)}!`, 'malformed'],
    [`Bearer ${key}`, key],
    [`bearer ${key}`, key],
    [`BEARER  ${key}`, key],
    [`Bearer \t${key} `, key],
  ])('%j -> %j', (header, expected) => {
    expect(bearerKey(header)).toBe(expected);
  });
});

import { LRUCache } from 'lru-cache';
import type { ApiKeyIdentity } from './apiKeys.js';
import { hashApiKey } from './apiKey.js';

interface Entry {
  identity: ApiKeyIdentity | null; // null: unknown or revoked
  fetchedAt: number;
}

/** The part of the key index (keyIndex.ts) the verifier asks before the database. */
export interface IssuedKeys {
  mayExist(hash: string): boolean;
  nextRefresh(): Promise<void>;
}

export interface KeyVerifierOptions {
  lookup: (keyHash: string) => Promise<ApiKeyIdentity | undefined>;
  /** Every issued key: a key it lacks is refused without a lookup. */
  issued: IssuedKeys;
  /** An answer older than this is never used: it bounds how long a revoked key keeps working. */
  maxAgeMs?: number;
  /** An answer older than this is used but refreshed in the background, so hot keys never wait. */
  refreshAfterMs?: number;
  maxEntries?: number;
  onRefreshError?: (err: unknown) => void;
  now?: () => number;
}

/**
 * Verifies API keys with an in-process cache keyed by the key itself, so that a known key
 * costs a map lookup: no hash, no database round trip. A revocation is seen by every instance
 * within maxAgeMs (4 s by default, under the 5 s promised). A key not in the cache is hashed
 * and looked up only if the index of issued keys has it: made-up keys never reach the database.
 */
export function createKeyVerifier(opts: KeyVerifierOptions) {
  const maxAge = opts.maxAgeMs ?? 4000;
  const refreshAfter = opts.refreshAfterMs ?? maxAge / 2;
  const now = opts.now ?? Date.now;
  const known = new LRUCache<string, Entry>({ max: opts.maxEntries ?? 10_000 });
  // Unknown keys are remembered apart, so a flood of made-up keys cannot evict the real ones.
  const unknown = new LRUCache<string, Entry>({ max: opts.maxEntries ?? 10_000 });
  const inFlight = new Map<string, Promise<Entry>>();

  function remember(key: string, entry: Entry): Entry {
    (entry.identity ? known : unknown).set(key, entry);
    (entry.identity ? unknown : known).delete(key); // a key revoked or (re)issued moves across
    return entry;
  }

  function fetch(key: string, hash = hashApiKey(key)): Promise<Entry> {
    let pending = inFlight.get(hash);
    if (!pending) {
      const startedAt = now(); // stamp with the start, so a slow answer is not treated as newer than it is
      pending = opts
        .lookup(hash)
        .then((identity) => remember(key, { identity: identity ?? null, fetchedAt: startedAt }))
        .finally(() => inFlight.delete(hash));
      inFlight.set(hash, pending);
    }
    return pending;
  }

  /** A fresh enough answer from the cache (an old known key is refreshed in the background), or undefined. */
  function fromCache(key: string): Entry | undefined {
    const entry = known.get(key) ?? unknown.get(key);
    if (!entry) return undefined;
    const age = now() - entry.fetchedAt;
    if (age >= maxAge) return undefined;
    if (entry.identity && age >= refreshAfter) fetch(key).catch((err) => opts.onRefreshError?.(err));
    return entry;
  }

  /** The index first: a key it lacks waits for its next refresh (a key issued a moment ago), then is unknown or looked up. */
  async function verifyUncached(key: string): Promise<Entry> {
    const hash = hashApiKey(key);
    if (!opts.issued.mayExist(hash)) {
      await opts.issued.nextRefresh();
      if (!opts.issued.mayExist(hash)) return remember(key, { identity: null, fetchedAt: now() });
    }
    return fetch(key, hash);
  }

  return {
    async verify(key: string): Promise<ApiKeyIdentity | undefined> {
      const entry = fromCache(key) ?? (await verifyUncached(key));
      return entry.identity ?? undefined;
    },

    /**
     * The answer when the cache has it, without waiting (the common case, so neither a
     * promise nor an object is made): the identity, null for an unknown or revoked key,
     * undefined when only the index or the database can tell (call verify()).
     */
    cachedAnswer(key: string): ApiKeyIdentity | null | undefined {
      return fromCache(key)?.identity;
    },
  };
}

export type KeyVerifier = ReturnType<typeof createKeyVerifier>;

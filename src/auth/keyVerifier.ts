import { LRUCache } from 'lru-cache';
import type { ApiKeyIdentity } from './apiKeys.js';
import { hashApiKey } from './apiKey.js';

interface Entry {
  identity: ApiKeyIdentity | null; // null: unknown or revoked
  fetchedAt: number;
}

export interface KeyVerifierOptions {
  lookup: (keyHash: string) => Promise<ApiKeyIdentity | undefined>;
  /** An answer older than this is never used: it bounds how long a revoked key keeps working. */
  maxAgeMs?: number;
  /** An answer older than this is used but refreshed in the background, so hot keys never wait. */
  refreshAfterMs?: number;
  maxEntries?: number;
  onRefreshError?: (err: unknown) => void;
  now?: () => number;
}

/**
 * Verifies API keys with an in-process cache: a known key costs no database round trip,
 * yet a revocation is seen by every instance within maxAgeMs (4 s by default, under the 5 s promised).
 */
export function createKeyVerifier(opts: KeyVerifierOptions) {
  const maxAge = opts.maxAgeMs ?? 4000;
  const refreshAfter = opts.refreshAfterMs ?? maxAge / 2;
  const now = opts.now ?? Date.now;
  const cache = new LRUCache<string, Entry>({ max: opts.maxEntries ?? 10_000 });
  // Unknown keys are remembered apart, so a flood of made-up keys cannot evict the real ones.
  const unknown = new LRUCache<string, Entry>({ max: opts.maxEntries ?? 10_000 });
  const cacheFor = (entry: Entry) => (entry.identity ? cache : unknown);
  const cached = (hash: string) => cache.get(hash) ?? unknown.get(hash);
  const inFlight = new Map<string, Promise<Entry>>();

  function fetch(hash: string): Promise<Entry> {
    let pending = inFlight.get(hash);
    if (!pending) {
      const startedAt = now(); // stamp with the start, so a slow answer is not treated as newer than it is
      pending = opts
        .lookup(hash)
        .then((identity) => {
          const entry = { identity: identity ?? null, fetchedAt: startedAt };
          cacheFor(entry).set(hash, entry);
          (entry.identity ? unknown : cache).delete(hash); // a key revoked or (re)issued moves across
          return entry;
        })
        .finally(() => inFlight.delete(hash));
      inFlight.set(hash, pending);
    }
    return pending;
  }

  /** A fresh enough answer from the cache (an old one is refreshed in the background), or undefined. */
  function fromCache(hash: string): Entry | undefined {
    const entry = cached(hash);
    if (!entry) return undefined;
    const age = now() - entry.fetchedAt;
    if (age >= maxAge) return undefined;
    if (age >= refreshAfter) fetch(hash).catch((err) => opts.onRefreshError?.(err));
    return entry;
  }

  return {
    async verify(key: string): Promise<ApiKeyIdentity | undefined> {
      const hash = hashApiKey(key);
      const entry = fromCache(hash) ?? (await fetch(hash));
      return entry.identity ?? undefined;
    },

    /**
     * The answer when the cache has it, without waiting (the common case, so it is not
     * wrapped in a promise): `{ identity }`, identity undefined for an unknown or revoked
     * key; undefined when only the database can tell (call verify()).
     */
    cachedAnswer(key: string): { identity: ApiKeyIdentity | undefined } | undefined {
      const entry = fromCache(hashApiKey(key));
      return entry && { identity: entry.identity ?? undefined };
    },
  };
}

export type KeyVerifier = ReturnType<typeof createKeyVerifier>;

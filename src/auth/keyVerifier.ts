import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';
import { KEY_CACHE_TTL_MS } from '../limits.js';
import { hashApiKey } from './apiKey.js';
import type { ApiKeyIdentity } from './apiKeys.js';

/**
 * Verifies API keys through a cache keyed by the key itself, so a known key costs neither a
 * hash nor a round trip. An answer older than the ttl is never served (no stale-while-revalidate:
 * a key idle for an hour and revoked meanwhile would get one more answer), so a revoked key
 * stops working within the ttl; a failed lookup drops the answer. A key neither cached nor in the index of issued
 * keys (`mayExist`) is refused without touching the cache or the database.
 */
export function createKeyVerifier(opts: {
  lookup(hash: string): Promise<ApiKeyIdentity | undefined>;
  mayExist(hash: string): Promise<boolean>;
  clock: Clock;
}) {
  // false: the database has no active key of this hash (revoked since the index's last refresh).
  const cache = new LRUCache<string, ApiKeyIdentity | false>({
    max: 10_000,
    ttl: KEY_CACHE_TTL_MS,
    ttlResolution: 0,
    perf: { now: opts.clock },
    fetchMethod: async (key) => (await opts.lookup(hashApiKey(key))) ?? false,
  });
  return async function verify(key: string): Promise<ApiKeyIdentity | undefined> {
    if (cache.peek(key, { allowStale: true }) === undefined && !(await opts.mayExist(hashApiKey(key)))) return undefined;
    return (await cache.fetch(key)) || undefined;
  };
}

import { LRUCache } from 'lru-cache';
import type { Clock } from '../clock.js';

/**
 * Addresses whose requests without a valid key are being refused (over quota or banned).
 * Keys they send that the verifier does not already know are looked up at most once a
 * second, so a flood of made-up keys costs the database next to nothing, while a real key
 * from the same address (a shared NAT) is still verified on a retry a second later.
 */
export function createLookupThrottle(clock: Clock) {
  const refused = new LRUCache<string, { until: number; lookedUpAt: number }>({ max: 50_000 });
  return {
    /** Whether a key this instance does not know may be looked up for this address now. */
    mayLookUp(ip: string): boolean {
      const state = refused.get(ip);
      const now = clock();
      if (state === undefined || state.until <= now) return true;
      if (now - state.lookedUpAt < 1000) return false;
      state.lookedUpAt = now;
      return true;
    },
    /** The rate limiter refused this address's requests without a valid key until `untilMs`. */
    refuse(ip: string, untilMs: number): void {
      refused.set(ip, { until: untilMs, lookedUpAt: refused.get(ip)?.lookedUpAt ?? 0 });
    },
  };
}

export type LookupThrottle = ReturnType<typeof createLookupThrottle>;

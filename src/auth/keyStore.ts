import type pg from 'pg';
import type { components } from '../../generated/openapi.js';

/*
 * What authentication needs of the keys it checks, defined here and implemented by accounts/
 * (accounts/repository.ts): app.ts, the composition root, passes the implementation in.
 */

/** What the service knows about an authenticated caller. */
export interface ApiKeyIdentity {
  /** The key's id. */
  id: number;
  accountId: number;
  plan: components['schemas']['Plan'];
  /** Set for enterprise accounts only; other plans take their limits from configuration. */
  perMinute: number | null;
  perDay: number | null;
  /** Placed orders the account may hold at once, when set for it (enterprise); else its plan's. */
  maxOpenOrders: number | null;
  scopes: components['schemas']['Scope'][];
  /** When the key stops working (ms since the epoch), judged by the service's clock; null if never. */
  expiresAt: number | null;
}

/** Prefixes (13 hex digits of the hash) of the unrevoked keys changed by transactions the last read could not see, and what this read saw. */
export interface KeyChanges {
  /** The snapshot read in (pg_snapshot's text, `xmin:xmax:xip,…`): the next read takes what it could not see. */
  snapshot: string;
  active: string[];
}

/** The key lookups authentication makes (the index of issued keys, verification, last use). */
export interface KeyStore {
  /** The identity behind an unrevoked key with this hash (apiKey.ts's hashApiKey), if any. */
  authenticate(keyHash: string): Promise<ApiKeyIdentity | undefined>;
  /** Keys changed since the snapshot `since` (null: all of them): what keyIndex.ts refreshes with. */
  changesSince(since: string | null): Promise<KeyChanges>;
  /** Writes when keys were last used (key id → ms since the epoch): what keyUsage.ts flushes. */
  recordUse(uses: Map<number, number>): Promise<void>;
}

/** Opens the store on the service's database pool. */
export type KeyStoreOn = (pool: pg.Pool) => KeyStore;

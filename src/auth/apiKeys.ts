import type pg from 'pg';
import { generateApiKey, hashApiKey } from './apiKey.js';

export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** What the service knows about an authenticated caller. */
export interface ApiKeyIdentity {
  id: number;
  plan: Plan;
  /** Set for enterprise keys only; other plans take their limits from configuration. */
  perMinute: number | null;
  perDay: number | null;
}

/** Hashes of the active keys created or changed, and the database's now() when read. */
export interface KeyChanges {
  asOf: Date;
  active: string[];
}

export interface ApiKeyRecord extends ApiKeyIdentity {
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const COLUMNS = `id, name, plan, per_minute AS "perMinute", per_day AS "perDay",
  created_at AS "createdAt", last_used_at AS "lastUsedAt", revoked_at AS "revokedAt"`;

export function apiKeysRepository(pool: pg.Pool) {
  return {
    /** Creates a key and returns it in clear; only its hash is stored. */
    async create(opts: { plan: Plan; name?: string; perMinute?: number; perDay?: number }) {
      const key = generateApiKey();
      const { rows } = await pool.query<ApiKeyRecord>(
        `INSERT INTO api_keys (key_hash, name, plan, per_minute, per_day)
         VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
        [hashApiKey(key), opts.name ?? '', opts.plan, opts.perMinute ?? null, opts.perDay ?? null],
      );
      return { key, record: rows[0]! };
    },

    /**
     * Looks up an active key by its hash and records the use in the same round trip.
     * Returns undefined for unknown and revoked keys.
     */
    async authenticate(keyHash: string): Promise<ApiKeyIdentity | undefined> {
      const { rows } = await pool.query<ApiKeyIdentity>(
        `UPDATE api_keys SET last_used_at = now()
          WHERE key_hash = $1 AND revoked_at IS NULL
          RETURNING id, plan, per_minute AS "perMinute", per_day AS "perDay"`,
        [keyHash],
      );
      return rows[0];
    },

    /** Hashes of the active keys created or changed since `since` (ever, when null), and the database's time of reading. */
    async changesSince(since: Date | null): Promise<KeyChanges> {
      const { rows } = await pool.query<KeyChanges>(
        `SELECT now() AS "asOf",
                coalesce(array_agg(key_hash) FILTER (WHERE revoked_at IS NULL), '{}') AS active
           FROM api_keys WHERE changed_at > coalesce($1::timestamptz, '-infinity')`,
        [since],
      );
      return rows[0]!;
    },

    async list(): Promise<ApiKeyRecord[]> {
      const { rows } = await pool.query<ApiKeyRecord>(`SELECT ${COLUMNS} FROM api_keys ORDER BY id`);
      return rows;
    },

    async count(): Promise<number> {
      const { rows } = await pool.query<{ n: number }>('SELECT count(*) AS n FROM api_keys');
      return rows[0]!.n;
    },

    /** Revokes by id or by the key itself; returns the revoked record, or undefined if none matched. */
    async revoke(idOrKey: { id: number } | { key: string }): Promise<ApiKeyRecord | undefined> {
      const [where, value] = 'id' in idOrKey ? ['id = $1', idOrKey.id] : ['key_hash = $1', hashApiKey(idOrKey.key)];
      const { rows } = await pool.query<ApiKeyRecord>(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()), changed_at = now() WHERE ${where} RETURNING ${COLUMNS}`,
        [value],
      );
      return rows[0];
    },
  };
}

export type ApiKeysRepository = ReturnType<typeof apiKeysRepository>;

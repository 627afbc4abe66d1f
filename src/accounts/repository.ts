import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { generateApiKey, hashApiKey, keyPrefix } from '../auth/apiKey.js';
import type { ApiKeyIdentity, KeyChanges, KeyStore } from '../auth/keyStore.js';
import { withTransaction } from '../db/transaction.js';
import { MAX_LIVE_KEYS_PER_ACCOUNT } from '../limits.js';
import { isoTimestamp } from '../db/isoTimestamp.js';
import { pageOf } from '../pagination/keysetPage.js';

export type Plan = components['schemas']['Plan'];
export type Scope = components['schemas']['Scope'];
export type Account = components['schemas']['Account'];
export type ApiKey = components['schemas']['ApiKey'];
export type ApiKeyWithSecret = components['schemas']['ApiKeyWithSecret'];

/** `satisfies` makes a scope openapi.yaml lists and this lacks (or the reverse) a type error. */
const scopeSet = { 'pets:read': true, 'pets:write': true, 'orders:read': true, 'orders:write': true, 'account:manage': true, 'events:read': true, 'webhooks:manage': true } satisfies Record<Scope, true>;
/** Every scope: what an account's first key holds. */
export const SCOPES = Object.keys(scopeSet) as Scope[];

/** Authentication's view of keys (auth/keyStore.ts): this repository is its KeyStore (app.ts passes it in). */
export type { ApiKeyIdentity, KeyChanges };

/** A key as the operator's CLI lists it. */
export interface KeyListing {
  id: number;
  accountId: number;
  name: string;
  plan: Plan;
  perMinute: number | null;
  perDay: number | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** Why a change to an account's keys was refused; the handlers turn it into the Error answer. */
export type KeyRefusal = 'api_key_not_found' | 'api_key_inactive' | 'last_key' | 'too_many_api_keys';
export class KeyChangeRefused extends Error {
  constructor(readonly reason: KeyRefusal) {
    super(reason);
  }
}

const KEY_COLUMNS = `id, name, prefix, scopes, ${isoTimestamp('created_at')} AS "createdAt", ${isoTimestamp('last_used_at')} AS "lastUsedAt",
  ${isoTimestamp('expires_at')} AS "expiresAt", ${isoTimestamp('revoked_at')} AS "revokedAt"`;
const LIVE = `revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`;
/** The scope of the key operations (their x-required-scope): a key without it cannot manage the account's keys. */
export const MANAGING_SCOPE: Scope = 'account:manage';
/**
 * A key that can manage the account's keys however long the caller waits: the last-key rule
 * counts only these. A key due to expire, in 2 seconds or in a year, would leave the account
 * locked out once it does, and a threshold would only move the edge (and tie the rule to
 * clocks); a key without the managing scope gets 403 on every key operation.
 */
const LASTING_MANAGER = `revoked_at IS NULL AND expires_at IS NULL AND '${MANAGING_SCOPE}' = ANY (scopes)`;

/** Accounts and their API keys: only a key's hash and prefix are stored. */
export function accountsRepository(pool: pg.Pool) {
  /** Inserts a key of `accountId` in `db`; the secret is returned, never stored. */
  async function insertKey(db: pg.PoolClient, accountId: number, opts: { name: string; scopes: Scope[]; expiresAt?: string | null }): Promise<ApiKeyWithSecret> {
    const secret = generateApiKey();
    const { rows } = await db.query<ApiKey>(
      `INSERT INTO api_keys (account_id, key_hash, prefix, name, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${KEY_COLUMNS}`,
      [accountId, hashApiKey(secret), keyPrefix(secret), opts.name, opts.scopes, opts.expiresAt ?? null],
    );
    return { ...rows[0]!, secret };
  }

  /** Locks the account against concurrent changes to its keys for the transaction; false if there is no such account. */
  async function lockAccount(db: pg.PoolClient, accountId: number): Promise<boolean> {
    return (await db.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId])).rowCount === 1;
  }

  async function liveKeys(db: pg.PoolClient, accountId: number): Promise<number> {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_keys WHERE account_id = $1 AND ${LIVE}`, [accountId]);
    return rows[0]!.n;
  }

  return {
    /** A new account and its first key, holding every scope (the operator's CLI). */
    async createAccount(opts: { plan: Plan; name?: string; perMinute?: number; perDay?: number; maxOpenOrders?: number }): Promise<{ accountId: number; key: ApiKeyWithSecret }> {
      return withTransaction(pool, async (db) => {
        const { rows } = await db.query<{ id: number }>(
          `INSERT INTO accounts (name, plan, per_minute, per_day, max_open_orders) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
          [opts.name ?? '', opts.plan, opts.perMinute ?? null, opts.perDay ?? null, opts.maxOpenOrders ?? null],
        );
        const accountId = rows[0]!.id;
        return { accountId, key: await insertKey(db, accountId, { name: opts.name ?? '', scopes: SCOPES }) };
      });
    },

    /** A key added to an account; `limit` false for the operator, who is not held to the account's maximum. Undefined: no such account. */
    async createKey(accountId: number, opts: { name: string; scopes: Scope[]; expiresAt?: string | null }, limit = true): Promise<ApiKeyWithSecret | undefined> {
      return withTransaction(pool, async (db) => {
        if (!(await lockAccount(db, accountId))) return undefined;
        if (limit && (await liveKeys(db, accountId)) >= MAX_LIVE_KEYS_PER_ACCOUNT) throw new KeyChangeRefused('too_many_api_keys');
        return insertKey(db, accountId, opts);
      });
    },

    async getAccount(accountId: number): Promise<Omit<Account, 'limits'> & { perMinute: number | null; perDay: number | null; maxOpenOrders: number | null }> {
      const { rows } = await pool.query(
        `SELECT id, name, plan, per_minute AS "perMinute", per_day AS "perDay", max_open_orders AS "maxOpenOrders", ${isoTimestamp('created_at')} AS "createdAt"
           FROM accounts WHERE id = $1`,
        [accountId],
      );
      return rows[0];
    },

    /** A keyset page of the account's keys, in id order. */
    async listKeys(accountId: number, opts: { limit: number; afterId?: number }): Promise<{ rows: ApiKey[]; hasMore: boolean }> {
      const { rows } = await pool.query<ApiKey>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`, [
        accountId,
        opts.afterId ?? 0,
        opts.limit + 1,
      ]);
      return pageOf(rows, opts.limit);
    },

    /** One key of the account (for the roll's scope check: a key's scopes never change). */
    async getKey(accountId: number, keyId: number): Promise<ApiKey | undefined> {
      return (await pool.query<ApiKey>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = $1 AND account_id = $2`, [keyId, accountId])).rows[0];
    },

    /**
     * A live key of the account replaced by a new one with its name and scopes; the old one
     * stops working `seconds` from now (or sooner, if it was to expire sooner).
     */
    async rollKey(accountId: number, keyId: number, seconds: number): Promise<ApiKeyWithSecret> {
      return withTransaction(pool, async (db) => {
        await lockAccount(db, accountId);
        const { rows } = await db.query<{ name: string; scopes: Scope[]; live: boolean }>(
          `SELECT name, scopes, ${LIVE} AS live FROM api_keys WHERE id = $1 AND account_id = $2`,
          [keyId, accountId],
        );
        const old = rows[0];
        if (!old) throw new KeyChangeRefused('api_key_not_found');
        if (!old.live) throw new KeyChangeRefused('api_key_inactive');
        await db.query(`UPDATE api_keys SET expires_at = least(expires_at, now() + make_interval(secs => $2)) WHERE id = $1`, [keyId, seconds]);
        // Counted after the old key's new expiry: rolling with 0 seconds at the maximum replaces one live key with another.
        if ((await liveKeys(db, accountId)) >= MAX_LIVE_KEYS_PER_ACCOUNT) throw new KeyChangeRefused('too_many_api_keys');
        return insertKey(db, accountId, { name: old.name, scopes: old.scopes });
      });
    },

    /**
     * Revokes a key of the account, unless it is usable and no other key of the account lasts
     * (unrevoked, with no expiry) and holds the managing scope; revoking a revoked key changes nothing. The account's row lock
     * serializes this with every other revoke, roll and create of its keys, so two revokes at
     * once cannot each count the other's key.
     */
    async revokeKey(accountId: number, keyId: number): Promise<void> {
      await withTransaction(pool, async (db) => {
        await lockAccount(db, accountId);
        const { rows } = await db.query<{ revoked: boolean; live: boolean; otherManager: boolean }>(
          `SELECT revoked_at IS NOT NULL AS revoked, ${LIVE} AS live,
                  EXISTS (SELECT 1 FROM api_keys WHERE account_id = $2 AND id <> $1 AND ${LASTING_MANAGER}) AS "otherManager"
             FROM api_keys WHERE id = $1 AND account_id = $2`,
          [keyId, accountId],
        );
        const key = rows[0];
        if (!key) throw new KeyChangeRefused('api_key_not_found');
        if (key.revoked) return;
        if (key.live && !key.otherManager) throw new KeyChangeRefused('last_key');
        await db.query(`UPDATE api_keys SET revoked_at = now(), changed_xid = pg_current_xact_id() WHERE id = $1`, [keyId]);
      });
    },

    /** The operator's revoke (by id or by the key itself), without the last-key rule; the revoked key's id, or undefined if none matched. */
    async revoke(idOrKey: { id: number } | { key: string }): Promise<number | undefined> {
      const [where, value] = 'id' in idOrKey ? ['id = $1', idOrKey.id] : ['key_hash = $1', hashApiKey(idOrKey.key)];
      const { rows } = await pool.query<{ id: number }>(
        `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()), changed_xid = pg_current_xact_id() WHERE ${where} RETURNING id`,
        [value],
      );
      return rows[0]?.id;
    },

    /** The unrevoked key with this hash and its account; expiry is the caller's to judge (its clock). */
    async authenticate(keyHash: string): Promise<ApiKeyIdentity | undefined> {
      const { rows } = await pool.query<Omit<ApiKeyIdentity, 'expiresAt'> & { expiresAt: Date | null }>(
        `SELECT k.id, k.account_id AS "accountId", a.plan, a.per_minute AS "perMinute", a.per_day AS "perDay", a.max_open_orders AS "maxOpenOrders",
                k.scopes, k.expires_at AS "expiresAt"
           FROM api_keys k JOIN accounts a ON a.id = k.account_id
          WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
        [keyHash],
      );
      const row = rows[0];
      return row && { ...row, expiresAt: row.expiresAt?.getTime() ?? null };
    },

    /**
     * Prefixes of the unrevoked keys changed by transactions that snapshot `since` (the last
     * read's) could not see: begun after it (xmax on) or running then (its xip list); every
     * key when null. So each change is read once, however long another transaction stays open
     * (reading from the oldest running transaction on re-read every change since, at every
     * refresh, while any older transaction on the server stayed open). The bounds are passed
     * as values, not pg_snapshot functions of a parameter, so that the planner uses the index.
     */
    async changesSince(since: string | null): Promise<KeyChanges> {
      const [, xmax = '0', xip = ''] = since?.split(':') ?? [];
      const { rows } = await pool.query<KeyChanges>(
        `SELECT pg_current_snapshot()::text AS snapshot,
                coalesce(array_agg(left(key_hash, 13)) FILTER (WHERE revoked_at IS NULL), '{}') AS active
           FROM api_keys WHERE changed_xid >= $1::xid8 OR changed_xid = ANY ($2::xid8[])`,
        [xmax, xip === '' ? [] : xip.split(',')],
      );
      return rows[0]!;
    },

    /** Records when keys were last used, in one statement (auth/keyUsage.ts batches them). */
    async recordUse(uses: Map<number, number>): Promise<void> {
      if (uses.size === 0) return;
      await pool.query(
        `UPDATE api_keys k SET last_used_at = greatest(k.last_used_at, u.at)
           FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, at) WHERE k.id = u.id`,
        [[...uses.keys()], [...uses.values()].map((ms) => new Date(ms))],
      );
    },

    /** Every key with its account, for the operator. */
    async list(): Promise<KeyListing[]> {
      const { rows } = await pool.query<KeyListing>(
        `SELECT k.id, k.account_id AS "accountId", k.name, a.plan, a.per_minute AS "perMinute", a.per_day AS "perDay",
                k.created_at AS "createdAt", k.last_used_at AS "lastUsedAt", k.expires_at AS "expiresAt", k.revoked_at AS "revokedAt"
           FROM api_keys k JOIN accounts a ON a.id = k.account_id ORDER BY k.id`,
      );
      return rows;
    },

    async countKeys(): Promise<number> {
      const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys');
      return rows[0]!.n;
    },
  };
}

export type AccountsRepository = ReturnType<typeof accountsRepository>;

// The repository answers what authentication asks of a key store (a type error here if they part).
accountsRepository satisfies (pool: pg.Pool) => KeyStore;

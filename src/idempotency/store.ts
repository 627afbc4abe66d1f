import type pg from 'pg';

/** A response as first given, kept to be replayed for the same Idempotency-Key. */
export interface SavedResponse<T> {
  requestHash: string;
  status: number;
  body: T;
}

/** Whose key it is and what it was sent with. */
export interface IdempotencyScope {
  apiKeyId: number;
  key: string;
  requestHash: string;
}

/** Another request with the same key is still running, and did not finish within the lock timeout. */
export class KeyInUseError extends Error {
  constructor() {
    super('A request with this Idempotency-Key is still in progress.');
    this.name = 'KeyInUseError';
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * The idempotency_keys table, used inside the caller's transaction so the saved response
 * and the effect it describes commit together.
 */
export const idempotencyStore = {
  /**
   * Claims the key; false when it was claimed before. A concurrent claim of the same key
   * waits on the row until the first transaction ends, up to the connection's lock
   * timeout: then KeyInUseError, as only a twin holds this row's lock.
   */
  async claim(client: pg.PoolClient, scope: IdempotencyScope): Promise<boolean> {
    const { rowCount } = await client
      .query(
        `INSERT INTO idempotency_keys (api_key_id, key, request_hash, status, response_body)
         VALUES ($1, $2, $3, 0, 'null') ON CONFLICT DO NOTHING`,
        [scope.apiKeyId, scope.key, scope.requestHash],
      )
      .catch((err: { code?: string }) => {
        throw err.code === LOCK_NOT_AVAILABLE ? new KeyInUseError() : err;
      });
    return rowCount === 1;
  },

  async saved<T>(client: pg.PoolClient, scope: IdempotencyScope): Promise<SavedResponse<T>> {
    const { rows } = await client.query<SavedResponse<T>>(
      `SELECT request_hash AS "requestHash", status, response_body AS body
         FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`,
      [scope.apiKeyId, scope.key],
    );
    return rows[0]!;
  },

  async save<T>(client: pg.PoolClient, scope: IdempotencyScope, status: number, body: T): Promise<SavedResponse<T>> {
    await client.query(`UPDATE idempotency_keys SET status = $3, response_body = $4 WHERE api_key_id = $1 AND key = $2`, [
      scope.apiKeyId,
      scope.key,
      status,
      JSON.stringify(body),
    ]);
    return { requestHash: scope.requestHash, status, body };
  },

  /** Forgets keys older than the retention. */
  async expire(pool: pg.Pool, olderThanHours: number): Promise<number> {
    const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [
      olderThanHours,
    ]);
    return rowCount ?? 0;
  },
};

import type pg from 'pg';
import type { OperationId } from '../openapi/operationTypes.js';

/** A response as first given, kept to be replayed for the same Idempotency-Key. */
export interface SavedResponse<T> {
  requestHash: string;
  status: number;
  body: T;
}

/** Whose key it is, for which operation, and what it was sent with. */
export interface IdempotencyScope {
  apiKeyId: number;
  /** Keys are per operation: the same key sent to createPet and to placeOrder names two requests. */
  operation: OperationId;
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
        `INSERT INTO idempotency_keys (api_key_id, operation, key, request_hash, status, response_body)
         VALUES ($1, $2, $3, $4, 0, 'null') ON CONFLICT DO NOTHING`,
        [scope.apiKeyId, scope.operation, scope.key, scope.requestHash],
      )
      .catch((err: { code?: string }) => {
        throw err.code === LOCK_NOT_AVAILABLE ? new KeyInUseError() : err;
      });
    return rowCount === 1;
  },

  async saved<T>(client: pg.PoolClient, scope: IdempotencyScope): Promise<SavedResponse<T>> {
    const { rows } = await client.query<SavedResponse<T>>(
      `SELECT request_hash AS "requestHash", status, response_body AS body
         FROM idempotency_keys WHERE api_key_id = $1 AND operation = $2 AND key = $3`,
      [scope.apiKeyId, scope.operation, scope.key],
    );
    return rows[0]!;
  },

  async save<T>(client: pg.PoolClient, scope: IdempotencyScope, status: number, body: T): Promise<SavedResponse<T>> {
    await client.query(
      `UPDATE idempotency_keys SET status = $4, response_body = $5 WHERE api_key_id = $1 AND operation = $2 AND key = $3`,
      [scope.apiKeyId, scope.operation, scope.key, status, JSON.stringify(body)],
    );
    return { requestHash: scope.requestHash, status, body };
  },

  /**
   * Inside the caller's transaction: runs `effect` and saves its result as the response
   * (`status`) under the key, or returns the response saved earlier under it. An effect
   * that throws rolls the claim back with the transaction, so an error is never saved.
   */
  async once<T>(
    client: pg.PoolClient,
    scope: IdempotencyScope,
    status: number,
    effect: () => Promise<T>,
  ): Promise<{ saved: SavedResponse<T>; replayed: boolean }> {
    if (!(await this.claim(client, scope))) return { saved: await this.saved<T>(client, scope), replayed: true };
    return { saved: await this.save(client, scope, status, await effect()), replayed: false };
  },

  /** Forgets keys older than the retention. */
  async expire(pool: pg.Pool, olderThanHours: number): Promise<number> {
    const { rowCount } = await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [
      olderThanHours,
    ]);
    return rowCount ?? 0;
  },
};

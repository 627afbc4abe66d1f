import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { withTransaction } from '../db/transaction.js';
import { errors } from '../errors/apiError.js';
import type { OperationId } from '../openapi/operationTypes.js';
import { requestHash } from './requestHash.js';

/** Where an operation's statements run: the pool, or the transaction that also holds its Idempotency-Key. */
export type Db = pg.Pool | pg.PoolClient;

const LOCK_NOT_AVAILABLE = '55P03';
/** Response headers an operation sets that are saved with its body and replayed (Location is rebuilt from the body by the handlers). */
const SAVED_HEADERS = ['etag'] as const;

/**
 * Runs an operation that takes an `Idempotency-Key` header, and answers with `status`: without
 * a key, as is; with one, once per (account, operation, key), in one transaction that claims
 * the key, runs the operation and saves its response, so neither exists without the other (an
 * operation that throws saves nothing). The same key and body again get the saved response
 * (`Idempotent-Replayed: true`); another body 422; a retry while the first still runs waits
 * on the key's row up to the lock timeout, then 409.
 */
export async function idempotent<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  operation: OperationId,
  status: number,
  run: (db: Db) => Promise<T>,
): Promise<T> {
  const key = request.headers['idempotency-key'];
  const pool = request.server.database.pool;
  if (typeof key !== 'string') {
    const body = await run(pool);
    reply.code(status);
    return body;
  }
  // Hashed after validation, so defaults are applied: {"status":"available"} or none are the same request.
  // With the path's parameters where it has any: the same key sent to change pet 1 and pet 2 names two requests.
  const params = request.params as Record<string, unknown>;
  const hasParams = Object.keys(params).length > 0;
  const hashOf = (p: Record<string, unknown>) => requestHash(hasParams ? { params: p, body: request.body ?? null } : request.body);
  const hash = hashOf(params);
  const scope = [request.apiKey!.accountId, operation, key];
  const saved = await withTransaction(pool, async (client) => {
    // Claimed before the operation takes any lock of its own, so waiting on a twin holds up nothing else.
    const claim = await client
      .query(`INSERT INTO idempotency_keys (account_id, operation, key, request_hash, request_params, status, response_body) VALUES ($1, $2, $3, $4, $5, 0, 'null') ON CONFLICT DO NOTHING`, [
        ...scope,
        hash,
        hasParams ? params : null,
      ])
      .catch((err: { code?: string }) => {
        throw err.code === LOCK_NOT_AVAILABLE ? errors.idempotency_key_in_use('A request with this Idempotency-Key is still in progress.') : err;
      });
    if (claim.rowCount === 0) {
      const { rows } = await client.query<{ hash: string; params: Record<string, unknown> | null; status: number; body: T; headers: Record<string, string> }>(
        `SELECT request_hash AS hash, request_params AS params, status, response_body AS body, response_headers AS headers FROM idempotency_keys WHERE account_id = $1 AND operation = $2 AND key = $3`,
        scope,
      );
      return { ...rows[0]!, replayed: true };
    }
    const body = await run(client);
    const headers = Object.fromEntries(SAVED_HEADERS.flatMap((name) => (reply.hasHeader(name) ? [[name, String(reply.getHeader(name))]] : [])));
    await client.query(
      `UPDATE idempotency_keys SET status = $4, response_body = $5, response_headers = $6 WHERE account_id = $1 AND operation = $2 AND key = $3`,
      [...scope, status, JSON.stringify(body ?? null), headers],
    );
    return { hash, params: null, status, body, headers, replayed: false };
  });
  if (saved.hash !== hash) throw errors.idempotency_key_reused(reuseMessage(saved, params, hasParams ? hashOf : undefined));
  if (saved.replayed) reply.header('idempotent-replayed', 'true').headers(saved.headers);
  reply.code(saved.status);
  return saved.body;
}

/**
 * What differs from the request a reused key was first sent with: the path (its parameters,
 * saved with the key), the body, or both; for a key saved before the parameters were, either.
 * The same key sent to another operation is another request, never a reuse.
 */
function reuseMessage(saved: { hash: string; params: Record<string, unknown> | null }, params: Record<string, unknown>, hashOf?: (params: Record<string, unknown>) => string): string {
  const used = 'This Idempotency-Key was used';
  if (!hashOf) return `${used} with a different request body.`;
  if (!saved.params) return `${used} with another path or a different request body.`;
  if (requestHash(saved.params) === requestHash(params)) return `${used} with a different request body.`;
  const path = `for another path (${named(saved.params)}, not ${named(params)})`;
  // The saved parameters with this body: the saved hash again exactly when only the path differs.
  return hashOf(saved.params) === saved.hash ? `${used} ${path}.` : `${used} ${path} and with a different request body.`;
}

const named = (params: Record<string, unknown>) =>
  Object.keys(params)
    .sort()
    .map((k) => `${k} ${String(params[k])}`)
    .join(', ');

import type { FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { callWrite, type Refusal } from '../db/refusal.js';
import { errors } from '../errors/apiError.js';
import type { OperationId } from '../openapi/operationTypes.js';
import { requestHash } from './requestHash.js';

/**
 * An Idempotency-Key as a write function takes it (migration 018's `idempotency_claim` and
 * `idempotency_save`): the scope it is unique in, the request's hash and path parameters, and the
 * status its response is saved with.
 */
export interface IdempotencyKey {
  account: number;
  operation: OperationId;
  key: string;
  hash: string;
  params: Record<string, unknown> | null;
  status: number;
}

/** What a write did: its answer's body, the resource's version where it has one, and how many delivery intents it queued. */
export interface Written<T> {
  body: T;
  version?: number;
  queued: number;
}

/** A response saved with the key, to replay. */
interface Replayed<T> {
  replayed: true;
  hash: string;
  params: Record<string, unknown> | null;
  status: number;
  body: T;
  headers: Record<string, string>;
}

/** A write function's answer: what it did, or, for a key already used, the saved response. */
export type WriteResult<T> = Written<T> | Replayed<T>;

export const isReplay = <T>(result: WriteResult<T>): result is Replayed<T> => 'replayed' in result;

/**
 * Runs an operation that takes an `Idempotency-Key` header, and answers with `status`. The
 * operation is one write function call (`run`) that claims the key (when there is one), runs the
 * write and saves its response, in one statement: neither exists without the other, and a refusal
 * saves nothing. The same key and body again get the saved response (`Idempotent-Replayed: true`,
 * its saved headers); another body 422; a retry while the first still runs waits on the key's row
 * up to the lock timeout, then 409. Answers the body, and the version for a response not replayed.
 */
export async function idempotent<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  operation: OperationId,
  status: number,
  run: (key: IdempotencyKey | null) => Promise<WriteResult<T>>,
): Promise<{ body: T; version?: number }> {
  const header = request.headers['idempotency-key'];
  // Hashed after validation, so defaults are applied: {"status":"available"} or none are the same request.
  // With the path's parameters where it has any: the same key sent to change pet 1 and pet 2 names two requests.
  const params = request.params as Record<string, unknown>;
  const hasParams = Object.keys(params).length > 0;
  const hashOf = (p: Record<string, unknown>) => requestHash(hasParams ? { params: p, body: request.body ?? null } : request.body);
  const key: IdempotencyKey | null =
    typeof header === 'string' ? { account: request.apiKey!.accountId, operation, key: header, hash: hashOf(params), params: hasParams ? params : null, status } : null;
  const result = await run(key);
  if (!isReplay(result)) {
    reply.code(status);
    return { body: result.body, version: result.version };
  }
  if (result.hash !== key!.hash) throw errors.idempotency_key_reused(reuseMessage(result, params, hasParams ? hashOf : undefined));
  reply.header('idempotent-replayed', 'true').headers(result.headers);
  reply.code(result.status);
  return { body: result.body };
}

/** The answer to the claim's refusal: a request with the same key is still running. */
const keyInUse = () => errors.idempotency_key_in_use('A request with this Idempotency-Key is still in progress.');

/**
 * A repository's write runner: runs a write function's call (db/refusal.ts callWrite), answers the
 * key's claim refusal here and any other with `answer`, and tells `eventsQueued` when the write
 * (not a replay) queued deliveries.
 */
export const writeRunner =
  (pool: pg.Pool, eventsQueued: () => void) =>
  async <T>(sql: string, params: unknown[], answer: (refusal: Refusal) => Error): Promise<WriteResult<T>> => {
    const result = await callWrite<WriteResult<T>>(pool, sql, params, (refusal) => (refusal.code === 'idempotency_key_in_use' ? keyInUse() : answer(refusal)));
    if (!isReplay(result) && result.queued > 0) eventsQueued();
    return result;
  };

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

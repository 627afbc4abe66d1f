import type { FastifyReply } from 'fastify';
import { errors } from '../errors/apiError.js';
import { KeyInUseError, type SavedResponse } from './store.js';

/**
 * Answers a request sent with an Idempotency-Key from the response saved under it:
 * 409 while a twin still holds the key, 422 when the key was used with another body,
 * `Idempotent-Replayed: true` when the saved response is an earlier request's.
 */
export async function answerIdempotently<T>(
  reply: FastifyReply,
  requestHash: string,
  run: () => Promise<{ saved: SavedResponse<T>; replayed: boolean }>,
): Promise<T> {
  const { saved, replayed } = await run().catch((err: unknown) => {
    throw err instanceof KeyInUseError ? errors.idempotency_key_in_use(err.message) : err;
  });
  if (saved.requestHash !== requestHash) {
    throw errors.idempotency_key_reused('This Idempotency-Key was used with a different request body.');
  }
  if (replayed) reply.header('idempotent-replayed', 'true');
  reply.code(saved.status);
  return saved.body;
}

import { ApiError } from '../http/errors.js';
import { requestHash } from '../http/requestHash.js';
import { petLocation, type PetsRepository } from '../repositories/pets.js';
import type { OperationHandler } from './types.js';

export function createPet(deps: { pets: PetsRepository }): OperationHandler<'createPet'> {
  return async (request, reply) => {
    const idempotencyKey = request.headers['idempotency-key'];
    if (typeof idempotencyKey !== 'string') {
      const pet = await deps.pets.create(request.body);
      reply.code(201).header('location', petLocation(pet.id));
      return pet;
    }
    // The body is hashed after validation, so defaults are applied: {"status":"available"} or none are the same request.
    const hash = requestHash(request.body);
    const { saved, replayed } = await deps.pets
      .createIdempotent(request.body, { apiKeyId: request.apiKey!.id, key: idempotencyKey, requestHash: hash })
      .catch((err: { code?: string }) => {
        // lock_not_available: the first request with this key is still running
        if (err.code === '55P03') {
          throw new ApiError(409, 'idempotency_key_in_use', 'A request with this Idempotency-Key is still in progress.');
        }
        throw err;
      });
    if (saved.requestHash !== hash) {
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body.');
    }
    if (replayed) reply.header('idempotent-replayed', 'true');
    reply.code(saved.status).header('location', saved.location);
    return saved.body;
  };
}

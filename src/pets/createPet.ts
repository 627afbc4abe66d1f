import { errors } from '../errors/apiError.js';
import { requestHash } from '../idempotency/requestHash.js';
import { KeyInUseError } from '../idempotency/store.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import type { PetsRepository } from './repository.js';
import type { PetUrls } from './urls.js';

export function createPet(deps: { pets: PetsRepository; urls: PetUrls }): OperationHandler<'createPet'> {
  return async (request, reply) => {
    const idempotencyKey = request.headers['idempotency-key'];
    if (typeof idempotencyKey !== 'string') {
      const pet = await deps.pets.create(request.body);
      reply.code(201).header('location', deps.urls.pet(pet.id));
      return pet;
    }
    // The body is hashed after validation, so defaults are applied: {"status":"available"} or none are the same request.
    const hash = requestHash(request.body);
    const { saved, replayed } = await deps.pets
      .createIdempotent(request.body, { apiKeyId: request.apiKey!.id, key: idempotencyKey, requestHash: hash })
      .catch((err: unknown) => {
        throw err instanceof KeyInUseError ? errors.idempotency_key_in_use(err.message) : err;
      });
    if (saved.requestHash !== hash) {
      throw errors.idempotency_key_reused('This Idempotency-Key was used with a different request body.');
    }
    if (replayed) reply.header('idempotent-replayed', 'true');
    reply.code(saved.status).header('location', deps.urls.pet(saved.body.id));
    return saved.body;
  };
}

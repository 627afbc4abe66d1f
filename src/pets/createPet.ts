import { answerIdempotently } from '../idempotency/answer.js';
import { requestHash } from '../idempotency/requestHash.js';
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
    const scope = { apiKeyId: request.apiKey!.id, operation: 'createPet', key: idempotencyKey, requestHash: hash } as const;
    const pet = await answerIdempotently(reply, hash, () => deps.pets.createIdempotent(request.body, scope));
    reply.header('location', deps.urls.pet(pet.id));
    return pet;
  };
}

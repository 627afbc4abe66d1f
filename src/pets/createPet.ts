import { idempotent } from '../idempotency/idempotent.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import type { PetsRepository } from './repository.js';
import type { PetUrls } from './urls.js';

export function createPet(deps: { pets: PetsRepository; urls: PetUrls }): OperationHandler<'createPet'> {
  return async (request, reply) => {
    const pet = await idempotent(request, reply, 'createPet', 201, (db) => deps.pets.create(request.body, db));
    reply.header('location', deps.urls.pet(pet.id));
    return pet;
  };
}

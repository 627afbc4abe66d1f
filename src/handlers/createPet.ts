import type { PetsRepository } from '../repositories/pets.js';
import type { OperationHandler } from './types.js';

export function createPet(deps: { pets: PetsRepository }): OperationHandler<'createPet'> {
  return async (request, reply) => {
    const pet = await deps.pets.create(request.body);
    reply.code(201).header('location', `/v1/pets/${pet.id}`);
    return pet;
  };
}

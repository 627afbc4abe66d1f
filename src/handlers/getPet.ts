import { petNotFound } from '../http/errors.js';
import type { PetsRepository } from '../repositories/pets.js';
import type { OperationHandler } from './types.js';

/** Deprecated: its Deprecation/Sunset/Link headers come from the operation's x-deprecation in openapi.yaml. */
export function getPet(deps: { pets: PetsRepository }): OperationHandler<'getPet'> {
  return async (request) => {
    const pet = await deps.pets.get(request.params.petId);
    if (!pet) throw petNotFound(request.params.petId);
    return pet;
  };
}

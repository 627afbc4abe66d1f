import { errors } from '../errors/apiError.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import type { PetsRepository } from './repository.js';

/** Deprecated: its Deprecation/Sunset/Link headers come from the operation's x-deprecation in openapi.yaml. */
export function getPet(deps: { pets: PetsRepository }): OperationHandler<'getPet'> {
  return async (request) => {
    const pet = await deps.pets.get(request.params.petId);
    if (!pet) throw errors.pet_not_found(`Pet ${request.params.petId} not found.`);
    return pet;
  };
}

import type { PetsRepository } from '../repositories/pets.js';
import { createPet } from './createPet.js';
import { getPet } from './getPet.js';
import { listPets } from './listPets.js';
import type { OperationHandlers } from './types.js';

export interface HandlerDeps {
  pets: PetsRepository;
  publicBaseUrl: string;
}

/** The map from operationId to handler; `satisfies` makes a missing operation a type error. */
export function createHandlers(deps: HandlerDeps) {
  return {
    listPets: listPets(deps),
    createPet: createPet(deps),
    getPet: getPet(deps),
  } satisfies OperationHandlers;
}

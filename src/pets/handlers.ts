import type { HandlersFor } from '../openapi/operationTypes.js';
import { createPet } from './createPet.js';
import { getPet } from './getPet.js';
import { listPets } from './listPets.js';
import type { PetsRepository } from './repository.js';
import type { PetUrls } from './urls.js';

export interface PetHandlerDeps {
  pets: PetsRepository;
  urls: PetUrls;
}

/** The map from operationId to handler for the pet operations; `satisfies` makes a missing one a type error. */
export function petHandlers(deps: PetHandlerDeps) {
  return {
    listPets: listPets(deps),
    createPet: createPet(deps),
    getPet: getPet(deps),
  } satisfies HandlersFor<'listPets' | 'createPet' | 'getPet'>;
}

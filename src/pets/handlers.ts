import { errors } from '../errors/apiError.js';
import { idempotent } from '../idempotency/idempotent.js';
import type { HandlersFor, ResourceUrls } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import type { PetsRepository } from './repository.js';

/** The pet operations by operationId; `satisfies` makes a missing one a type error. */
export function petHandlers({ pets, urls }: { pets: PetsRepository; urls: ResourceUrls }) {
  return {
    async listPets(request, reply) {
      const query = request.query as PageQuery & typeof request.query;
      const page = await pets.list({ limit: query.limit, status: query.status, afterId: pageStart(query) });
      linkNextPage(reply, urls.list, query, page);
      return page.rows;
    },

    async createPet(request, reply) {
      const pet = await idempotent(request, reply, 'createPet', 201, (db) => pets.create(request.body, request.apiKey!.accountId, db));
      reply.header('location', urls.item(pet.id));
      return pet;
    },

    // Deprecated: its Deprecation/Sunset/Link headers come from the operation's x-deprecation in openapi.yaml.
    async getPet(request) {
      const pet = await pets.get(request.params.petId);
      if (!pet) throw errors.pet_not_found(`Pet ${request.params.petId} not found.`);
      return pet;
    },
  } satisfies HandlersFor<'listPets' | 'createPet' | 'getPet'>;
}

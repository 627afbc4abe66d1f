import type { OperationHandler } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import type { PetsRepository } from './repository.js';
import type { PetUrls } from './urls.js';

export function listPets(deps: { pets: PetsRepository; urls: PetUrls }): OperationHandler<'listPets'> {
  return async (request, reply) => {
    const query = request.query as PageQuery & typeof request.query;
    const page = await deps.pets.list({ limit: query.limit, status: query.status, afterId: pageStart(query) });
    linkNextPage(reply, deps.urls.list, query, { rows: page.pets, hasMore: page.hasMore });
    return page.pets;
  };
}

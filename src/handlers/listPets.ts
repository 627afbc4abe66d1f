import { encodeCursor, decodeCursor } from '../http/cursor.js';
import { invalidCursor } from '../http/errors.js';
import type { PetsRepository } from '../repositories/pets.js';
import type { OperationHandler } from './types.js';

export function listPets(deps: { pets: PetsRepository; publicBaseUrl: string }): OperationHandler<'listPets'> {
  return async (request, reply) => {
    const { limit = 20, status, cursor } = request.query;
    const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
    if (cursor !== undefined && afterId === undefined) throw invalidCursor();

    const page = await deps.pets.list({ limit, status, afterId });
    const last = page.pets.at(-1);
    if (page.hasMore && last) {
      const next = new URLSearchParams({ limit: String(limit) });
      if (status) next.set('status', status);
      next.set('cursor', encodeCursor(last.id));
      reply.header('link', `<${deps.publicBaseUrl}/v1/pets?${next}>; rel="next"`);
    }
    return page.pets;
  };
}

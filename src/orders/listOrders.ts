import { errors } from '../errors/apiError.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import { decodeCursor, encodeCursor } from '../pets/cursor.js';
import type { OrdersRepository } from './repository.js';
import type { OrderUrls } from './urls.js';

/** The caller's own orders only, keyset-paginated by id exactly as listPets is. */
export function listOrders(deps: { orders: OrdersRepository; urls: OrderUrls }): OperationHandler<'listOrders'> {
  return async (request, reply) => {
    // `limit` is always there: validation applies openapi.yaml's default.
    const { limit, status, cursor } = request.query as { limit: number } & typeof request.query;
    const afterId = cursor === undefined ? undefined : decodeCursor(cursor);
    if (cursor !== undefined && afterId === undefined) {
      throw errors.invalid_cursor('querystring/cursor is not a cursor produced by this service.');
    }

    const page = await deps.orders.list(request.apiKey!.id, { limit, status, afterId });
    const last = page.orders.at(-1);
    if (page.hasMore && last) {
      // Every value is URL-safe as it is: digits, an enum value, a base64url cursor.
      const next = `limit=${limit}${status ? `&status=${status}` : ''}&cursor=${encodeCursor(last.id)}`;
      reply.header('link', `<${deps.urls.list(next)}>; rel="next"`);
    }
    return page.orders;
  };
}

import type { OperationHandler } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import type { OrdersRepository } from './repository.js';
import type { OrderUrls } from './urls.js';

/** The caller's own orders only, keyset-paginated by id exactly as listPets is. */
export function listOrders(deps: { orders: OrdersRepository; urls: OrderUrls }): OperationHandler<'listOrders'> {
  return async (request, reply) => {
    const query = request.query as PageQuery & typeof request.query;
    const page = await deps.orders.list(request.apiKey!.id, { limit: query.limit, status: query.status, afterId: pageStart(query) });
    linkNextPage(reply, deps.urls.list, query, { rows: page.orders, hasMore: page.hasMore });
    return page.orders;
  };
}

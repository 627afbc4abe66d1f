import type { Config } from '../config.js';
import { idempotent } from '../idempotency/idempotent.js';
import type { HandlersFor, ResourceUrls } from '../openapi/operationTypes.js';
import { linkNextPage, pageStart, type PageQuery } from '../pagination/keysetPage.js';
import { orderNotFound, type OrdersRepository } from './repository.js';

/** The order operations by operationId, each on the caller's own orders only; `satisfies` makes a missing one a type error. */
export function orderHandlers({ orders, urls, openOrders }: { orders: OrdersRepository; urls: ResourceUrls; openOrders: Config['openOrders'] }) {
  return {
    async placeOrder(request, reply) {
      const { accountId, plan, maxOpenOrders } = request.apiKey!;
      const maxOpen = maxOpenOrders ?? openOrders[plan];
      const { body: order } = await idempotent(request, reply, 'placeOrder', 201, (key) => orders.place(request.body.petId, accountId, maxOpen, key));
      reply.header('location', urls.item(order.id));
      return order;
    },

    async listOrders(request, reply) {
      const query = request.query as PageQuery & typeof request.query;
      const page = await orders.list(request.apiKey!.accountId, { limit: query.limit, status: query.status, afterId: pageStart(query) });
      linkNextPage(reply, urls.list, query, page);
      return page.rows;
    },

    async getOrder(request) {
      const order = await orders.get(request.params.orderId, request.apiKey!.accountId);
      if (!order) throw orderNotFound(request.params.orderId);
      return order;
    },

    completeOrder: async (request) => orders.complete(request.params.orderId, request.apiKey!.accountId),
    cancelOrder: async (request) => orders.cancel(request.params.orderId, request.apiKey!.accountId),
  } satisfies HandlersFor<'placeOrder' | 'listOrders' | 'getOrder' | 'completeOrder' | 'cancelOrder'>;
}

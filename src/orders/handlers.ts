import type { HandlersFor } from '../openapi/operationTypes.js';
import { cancelOrder } from './cancelOrder.js';
import { completeOrder } from './completeOrder.js';
import { getOrder } from './getOrder.js';
import { listOrders } from './listOrders.js';
import { placeOrder } from './placeOrder.js';
import type { OrdersRepository } from './repository.js';
import type { OrderUrls } from './urls.js';

export interface OrderHandlerDeps {
  orders: OrdersRepository;
  urls: OrderUrls;
}

/** The map from operationId to handler for the order operations; `satisfies` makes a missing one a type error. */
export function orderHandlers(deps: OrderHandlerDeps) {
  return {
    placeOrder: placeOrder(deps),
    listOrders: listOrders(deps),
    getOrder: getOrder(deps),
    completeOrder: completeOrder(deps),
    cancelOrder: cancelOrder(deps),
  } satisfies HandlersFor<'placeOrder' | 'listOrders' | 'getOrder' | 'completeOrder' | 'cancelOrder'>;
}

import type { OperationHandler } from '../openapi/operationTypes.js';
import { orderNotFound } from './notFound.js';
import type { OrdersRepository } from './repository.js';

export function getOrder(deps: { orders: OrdersRepository }): OperationHandler<'getOrder'> {
  return async (request) => {
    const order = await deps.orders.get(request.params.orderId, request.apiKey!.id);
    if (!order) throw orderNotFound(request.params.orderId);
    return order;
  };
}

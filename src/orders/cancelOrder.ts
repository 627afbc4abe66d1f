import type { OperationHandler } from '../openapi/operationTypes.js';
import type { OrdersRepository } from './repository.js';
import { transitionTo } from './transition.js';

export function cancelOrder(deps: { orders: OrdersRepository }): OperationHandler<'cancelOrder'> {
  return async (request) => transitionTo('cancelled', () => deps.orders.cancel(request.params.orderId, request.apiKey!.id));
}

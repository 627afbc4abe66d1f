import type { OperationHandler } from '../openapi/operationTypes.js';
import type { OrdersRepository } from './repository.js';
import { transitionTo } from './transition.js';

export function completeOrder(deps: { orders: OrdersRepository }): OperationHandler<'completeOrder'> {
  return async (request) => transitionTo('completed', () => deps.orders.complete(request.params.orderId, request.apiKey!.id));
}

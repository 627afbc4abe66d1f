import { errors } from '../errors/apiError.js';
import { idempotent } from '../idempotency/idempotent.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import { PetNotAvailable, type OrdersRepository } from './repository.js';
import type { OrderUrls } from './urls.js';

export function placeOrder(deps: { orders: OrdersRepository; urls: OrderUrls }): OperationHandler<'placeOrder'> {
  return async (request, reply) => {
    const { petId } = request.body;
    // PetNotAvailable rolls a claimed Idempotency-Key back with the rest: only a placed order is saved.
    const order = await idempotent(request, reply, 'placeOrder', 201, (db) => deps.orders.place(petId, request.apiKey!.id, db)).catch((err: unknown) => {
      if (!(err instanceof PetNotAvailable)) throw err;
      if (err.status === undefined) throw errors.pet_not_found(`Pet ${petId} not found.`);
      throw errors.pet_not_available(`Pet ${petId} is ${err.status}, not available.`);
    });
    reply.header('location', deps.urls.order(order.id));
    return order;
  };
}

import { errors } from '../errors/apiError.js';
import { answerIdempotently } from '../idempotency/answer.js';
import { requestHash } from '../idempotency/requestHash.js';
import type { OperationHandler } from '../openapi/operationTypes.js';
import { PetNotAvailable, type Order, type OrdersRepository } from './repository.js';
import type { OrderUrls } from './urls.js';

export function placeOrder(deps: { orders: OrdersRepository; urls: OrderUrls }): OperationHandler<'placeOrder'> {
  return async (request, reply) => {
    const { petId } = request.body;
    const owner = request.apiKey!.id;
    const idempotencyKey = request.headers['idempotency-key'];
    let order: Order;
    try {
      if (typeof idempotencyKey !== 'string') {
        order = await deps.orders.place(petId, owner);
        reply.code(201);
      } else {
        const hash = requestHash(request.body);
        const scope = { apiKeyId: owner, operation: 'placeOrder', key: idempotencyKey, requestHash: hash } as const;
        order = await answerIdempotently(reply, hash, () => deps.orders.placeIdempotent(petId, scope));
      }
    } catch (err) {
      if (!(err instanceof PetNotAvailable)) throw err;
      if (err.status === undefined) throw errors.pet_not_found(`Pet ${petId} not found.`);
      throw errors.pet_not_available(`Pet ${petId} is ${err.status}, not available.`);
    }
    reply.header('location', deps.urls.order(order.id));
    return order;
  };
}

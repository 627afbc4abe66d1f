import { errors } from '../errors/apiError.js';
import { orderNotFound } from './notFound.js';
import { OrderNotPlaced, type Order, type OrderStatus } from './repository.js';

/** Runs a transition of the caller's order to `target`; a refusal is 404 (not the caller's), or 409 naming both states. */
export async function transitionTo(target: OrderStatus, change: () => Promise<Order>): Promise<Order> {
  return change().catch((err: unknown) => {
    if (!(err instanceof OrderNotPlaced)) throw err;
    if (err.status === undefined) throw orderNotFound(err.orderId);
    throw errors.invalid_order_transition(`Order ${err.orderId} cannot go from ${err.status} to ${target}: only a placed order can.`);
  });
}

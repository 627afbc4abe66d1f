import { errors } from '../errors/apiError.js';

/** The one answer for an order the caller may not see, whether it is another key's or does not exist. */
export const orderNotFound = (id: number) => errors.order_not_found(`Order ${id} not found.`);

import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import type { Db } from '../idempotency/idempotent.js';
import type { PetStatus } from '../pets/repository.js';
import { CANCEL, COMPLETE, GET, LIST, LIST_BY_STATUS, ORDER_STATUS, PET_STATUS, PLACE } from './sql.js';

export type Order = components['schemas']['Order'];
export type OrderStatus = components['schemas']['OrderStatus'];

export interface OrderPage {
  orders: Order[];
  /** True when at least one more order follows the last one returned. */
  hasMore: boolean;
}

/** A placement that changed nothing: no pet has this id (`status` undefined), or it is not available. */
export class PetNotAvailable extends Error {
  constructor(
    readonly petId: number,
    readonly status: PetStatus | undefined,
  ) {
    super(`Pet ${petId} is ${status ?? 'missing'}.`);
    this.name = 'PetNotAvailable';
  }
}

/** A transition that changed nothing: this key has no order with this id (`status` undefined), or it is not placed. */
export class OrderNotPlaced extends Error {
  constructor(
    readonly orderId: number,
    readonly status: OrderStatus | undefined,
  ) {
    super(`Order ${orderId} is ${status ?? 'missing'}.`);
    this.name = 'OrderNotPlaced';
  }
}

/** All SQL about orders, each read and change on behalf of the order's owner (`owner`: its API key's id). */
export function ordersRepository(pool: pg.Pool) {
  async function transition(sql: string, id: number, owner: number): Promise<Order> {
    const { rows } = await pool.query<Order>(sql, [id, owner]);
    if (rows[0]) return rows[0];
    const order = await pool.query<{ status: OrderStatus }>(ORDER_STATUS, [id, owner]);
    throw new OrderNotPlaced(id, order.rows[0]?.status);
  }

  return {
    /** Places the order, the pet moving to pending with it (in the pool, or an Idempotency-Key's transaction); PetNotAvailable when it cannot. */
    async place(petId: number, owner: number, db: Db = pool): Promise<Order> {
      const { rows } = await db.query<Order>(PLACE, [petId, owner]);
      if (rows[0]) return rows[0];
      // Read after the guarded statement matched nothing: what it found, for the answer (a race may have moved it since).
      const pet = await db.query<{ status: PetStatus }>(PET_STATUS, [petId]);
      throw new PetNotAvailable(petId, pet.rows[0]?.status);
    },

    /** placed -> completed, the pet pending -> sold; OrderNotPlaced when it cannot. */
    complete: (id: number, owner: number) => transition(COMPLETE, id, owner),
    /** placed -> cancelled, the pet pending -> available; OrderNotPlaced when it cannot. */
    cancel: (id: number, owner: number) => transition(CANCEL, id, owner),

    async get(id: number, owner: number): Promise<Order | undefined> {
      return (await pool.query<Order>(GET, [id, owner])).rows[0];
    },

    async list(owner: number, opts: { limit: number; status?: OrderStatus; afterId?: number }): Promise<OrderPage> {
      // One extra row tells whether a next page exists without a COUNT.
      const params = [owner, opts.afterId ?? 0, opts.limit + 1];
      const { rows } = await pool.query<Order>(opts.status ? LIST_BY_STATUS : LIST, opts.status ? [...params, opts.status] : params);
      const hasMore = rows.length > opts.limit;
      return { orders: hasMore ? rows.slice(0, opts.limit) : rows, hasMore };
    },
  };
}

export type OrdersRepository = ReturnType<typeof ordersRepository>;

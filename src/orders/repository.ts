import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { errors } from '../errors/apiError.js';
import type { EventRecorder } from '../events/repository.js';
import type { Clock } from '../clock.js';
import type { Db } from '../idempotency/idempotent.js';
import type { Pet, PetStatus } from '../pets/repository.js';
import { inTransaction } from '../db/transaction.js';
import { CANCEL, COMPLETE, GET, LIST, LIST_BY_STATUS, LOCK_OWNER, ORDER_STATUS, PET_AFTER, PET_STATUS, PLACE } from './sql.js';
import { pageOf } from '../pagination/keysetPage.js';
import { releaseLapsedHold } from './expiry.js';

export type Order = components['schemas']['Order'];
export type OrderStatus = components['schemas']['OrderStatus'];

/** The one answer for an order the caller may not see, whether it is another account's or does not exist. */
export const orderNotFound = (id: number) => errors.order_not_found(`Order ${id} not found.`);

/**
 * All SQL about orders, each read and change on behalf of the order's owner (`owner`: its account's id).
 * A change that cannot happen throws the error it is answered with; when a guarded statement matched
 * nothing, a second read finds why (a race may have moved the row since: the answer names what it found).
 * `holdSeconds`: how long a placed order holds its pet; `clock`: the one time every hold is written
 * with and checked against (injected, so tests move it; sql.ts says why not the database's).
 */
export function ordersRepository(pool: pg.Pool, events: EventRecorder, opts: { holdSeconds: number; clock: Clock }) {
  /**
   * In the change's transaction: the order's event, for its owner and its pet's creator, and
   * `pet.updated` for the pet's creator, since every order change moves its pet.
   */
  async function recordChange(client: pg.PoolClient, type: 'order.placed' | 'order.completed' | 'order.cancelled', order: Order, owner: number) {
    const { createdBy, ...pet } = (await client.query<Pet & { createdBy: number | null }>(PET_AFTER, [order.petId])).rows[0]!;
    await events.record(client, type, order, [owner, createdBy]);
    await events.record(client, 'pet.updated', pet, [createdBy]);
  }

  async function transition(sql: string, target: 'completed' | 'cancelled', id: number, owner: number): Promise<Order> {
    return inTransaction(pool, async (client) => {
      const { rows } = await client.query<Order>(sql, [id, owner, new Date(opts.clock())]);
      if (rows[0]) {
        await recordChange(client, `order.${target}`, rows[0], owner);
        return rows[0];
      }
      const found = (await client.query<{ status: OrderStatus; expiresAt: string }>(ORDER_STATUS, [id, owner])).rows[0];
      if (found === undefined) throw orderNotFound(id);
      // Expired, or placed past its hold and not yet swept: either way the hold is over.
      if (found.status === 'expired' || found.status === 'placed') throw errors.order_expired(`Order ${id} expired at ${found.expiresAt}: its hold is over.`);
      throw errors.invalid_order_transition(`Order ${id} cannot go from ${found.status} to ${target}: only a placed order can.`);
    });
  }

  return {
    /**
     * Places the order, the pet moving to pending with it, while the owner holds fewer than
     * `maxOpen` placed orders (in a transaction of its own, or an Idempotency-Key's, which a
     * refusal rolls back).
     */
    async place(petId: number, owner: number, maxOpen: number, db: Db = pool): Promise<Order> {
      return inTransaction(db, async (client) => {
        const now = new Date(opts.clock());
        await client.query(LOCK_OWNER, [owner]);
        // A hold on the pet that has ended holds nothing: expired here (with its events) if no sweep has yet.
        await releaseLapsedHold(client, events, petId, now);
        const { rows } = await client.query<Order>(PLACE, [petId, owner, maxOpen, opts.holdSeconds, now]);
        if (rows[0]) {
          await recordChange(client, 'order.placed', rows[0], owner);
          return rows[0];
        }
        const status = (await client.query<{ status: PetStatus }>(PET_STATUS, [petId])).rows[0]?.status;
        if (status === undefined) throw errors.pet_not_found(`Pet ${petId} not found.`);
        if (status !== 'available') throw errors.pet_not_available(`Pet ${petId} is ${status}, not available.`);
        throw errors.too_many_open_orders(`The account already holds ${maxOpen} placed orders, its plan's most; complete or cancel one first.`);
      });
    },

    /** Expires the pet's placed order whose hold has ended, in `client`'s transaction (for a change to the pet: pets/repository.ts). */
    releaseLapsedHold: (client: pg.PoolClient, petId: number) => releaseLapsedHold(client, events, petId, new Date(opts.clock())),

    /** placed -> completed, the pet pending -> sold, before the order's expiresAt. */
    complete: (id: number, owner: number) => transition(COMPLETE, 'completed', id, owner),
    /** placed -> cancelled, the pet pending -> available, before the order's expiresAt. */
    cancel: (id: number, owner: number) => transition(CANCEL, 'cancelled', id, owner),

    async get(id: number, owner: number): Promise<Order | undefined> {
      return (await pool.query<Order>(GET, [id, owner, new Date(opts.clock())])).rows[0];
    },

    /** A keyset page of the owner's orders; `hasMore` when at least one more follows the last one returned. */
    async list(owner: number, page: { limit: number; status?: OrderStatus; afterId?: number }): Promise<{ rows: Order[]; hasMore: boolean }> {
      // One extra row tells whether a next page exists without a COUNT.
      const params = [owner, page.afterId ?? 0, page.limit + 1, new Date(opts.clock())];
      const { rows } = await pool.query<Order>(page.status ? LIST_BY_STATUS : LIST, page.status ? [...params, page.status] : params);
      return pageOf(rows, page.limit);
    },
  };
}

export type OrdersRepository = ReturnType<typeof ordersRepository>;

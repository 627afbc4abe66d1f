import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import type { Refusal } from '../db/refusal.js';
import { errors } from '../errors/apiError.js';
import type { Clock } from '../clock.js';
import { writeRunner, type IdempotencyKey } from '../idempotency/idempotent.js';
import { GET, LIST, LIST_BY_STATUS } from './sql.js';
import { pageOf } from '../pagination/keysetPage.js';

export type Order = components['schemas']['Order'];
export type OrderStatus = components['schemas']['OrderStatus'];

/** The one answer for an order the caller may not see, whether it is another account's or does not exist. */
export const orderNotFound = (id: number) => errors.order_not_found(`Order ${id} not found.`);

/** The answer to an order write's refusal (migration 018): `petId` for a placement, `orderId` and `target` for a transition, `maxOpen` the plan's cap. */
function refused(at: { petId?: number; orderId?: number; target?: string; maxOpen?: number }, { code, detail }: Refusal): Error {
  switch (code) {
    case 'pet_not_found':
      return errors.pet_not_found(`Pet ${at.petId} not found.`);
    case 'pet_not_available':
      return errors.pet_not_available(`Pet ${at.petId} is ${detail.status}, not available.`);
    case 'too_many_open_orders':
      return errors.too_many_open_orders(`The account already holds ${at.maxOpen} placed orders, its plan's most; complete or cancel one first.`);
    case 'order_not_found':
      return orderNotFound(at.orderId!);
    // Expired, or placed past its hold and not yet swept: either way the hold is over.
    case 'order_expired':
      return errors.order_expired(`Order ${at.orderId} expired at ${detail.expiresAt}: its hold is over.`);
    case 'invalid_order_transition':
      return errors.invalid_order_transition(`Order ${at.orderId} cannot go from ${detail.status} to ${at.target}: only a placed order can.`);
    default:
      return new Error(`unexpected refusal ${code}`);
  }
}

/**
 * All SQL about orders, each read and change on behalf of the order's owner (`owner`: its account's id).
 * Each write is one call of its function (migration 018), its own transaction, with its events and
 * their delivery intents; a change that cannot happen is refused with the error it is answered with.
 * `holdSeconds`: how long a placed order holds its pet; `clock`: the one time every hold is written
 * with and checked against (injected, so tests move it; sql.ts says why not the database's);
 * `eventsQueued`: told after a write that queued deliveries.
 */
export function ordersRepository(pool: pg.Pool, opts: { holdSeconds: number; clock: Clock; eventsQueued: () => void }) {
  const run = writeRunner(pool, opts.eventsQueued);
  const write = (at: Parameters<typeof refused>[0], sql: string, params: unknown[]) => run<Order>(sql, params, (refusal) => refused(at, refusal));

  async function transition(target: 'completed' | 'cancelled', id: number, owner: number): Promise<Order> {
    const result = await write({ orderId: id, target }, 'SELECT transition_order($1, $2, $3, $4) AS r', [id, owner, new Date(opts.clock()), target]);
    return result.body;
  }

  return {
    /**
     * Places the order, the pet moving to pending with it, while the owner holds fewer than
     * `maxOpen` placed orders whose hold has not ended.
     */
    place: (petId: number, owner: number, maxOpen: number, key: IdempotencyKey | null) =>
      write({ petId, maxOpen }, 'SELECT place_order($1, $2, $3, $4, $5, $6) AS r', [petId, owner, maxOpen, opts.holdSeconds, new Date(opts.clock()), key]),

    /** placed -> completed, the pet pending -> sold, before the order's expiresAt. */
    complete: (id: number, owner: number) => transition('completed', id, owner),
    /** placed -> cancelled, the pet pending -> available, before the order's expiresAt. */
    cancel: (id: number, owner: number) => transition('cancelled', id, owner),

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

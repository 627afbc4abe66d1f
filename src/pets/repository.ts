import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { inTransaction } from '../db/transaction.js';
import { errors } from '../errors/apiError.js';
import type { EventRecorder, WrittenEvent } from '../events/repository.js';
import { ifMatchHolds, strongEtag } from '../http/conditional.js';
import type { Db } from '../idempotency/idempotent.js';
import type { Clock } from '../clock.js';
import { CREATE_WITH_EVENT, DELETE, GET, HOLDING_ORDER, LIST, LIST_BY_CATEGORY, LIST_BY_CATEGORY_AND_STATUS, LIST_BY_STATUS, LOCK, UPDATE } from './sql.js';
import { pageOf } from '../pagination/keysetPage.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetPatch = components['schemas']['PetPatch'];
export type PetStatus = components['schemas']['PetStatus'];

/** A pet and its version, whose strong ETag is `strongEtag(version)`. */
export interface VersionedPet {
  pet: Pet;
  version: number;
}

/** Every pet starts at version 1 (migration 010): createPet's ETag, replays included. */
export const FIRST_VERSION = 1;

// A literal of the Pet's fields rather than a rest copy: on getPet's path, and a fixed shape is cheaper to build and serialize.
const versioned = ({ id, name, categoryId, status, version }: Pet & { version: number }): VersionedPet => ({ pet: { id, name, categoryId, status }, version });
/** Whether every field of a merge patch already has its value in the pet. */
const changesNothing = (pet: Pet, patch: PetPatch) =>
  (patch.name === undefined || patch.name === pet.name) && (patch.categoryId === undefined || patch.categoryId === pet.categoryId) && (patch.status === undefined || patch.status === pet.status);
export const petNotFound = (id: number) => errors.pet_not_found(`Pet ${id} not found.`);

/**
 * All SQL about pets; every change writes its event (`events`) in its own transaction. `clock`: the
 * time a hold is checked against (orders/sql.ts); `releaseLapsedHold`: the orders' own expiry of a
 * pet's hold that has ended, run before a change reads the pet (api/plugin.ts hands it over, so pets
 * imports nothing of orders).
 */
export function petsRepository(
  pool: pg.Pool,
  events: EventRecorder,
  opts: { clock: Clock; releaseLapsedHold: (client: pg.PoolClient, petId: number) => Promise<unknown> },
) {
  /**
   * Locks a live pet for a change by `accountId` and checks, in this order, that it exists (404),
   * that the account created it (403) and that `If-Match` holds (412); its fields and version.
   */
  async function lockForChange(db: pg.PoolClient, id: number, accountId: number, ifMatch: string | undefined) {
    // First, as the sweep does it: the order's row, then the pet's. The version it bumps is the one
    // getPet showed for the ended hold; a refusal below rolls it back with the rest.
    await opts.releaseLapsedHold(db, id);
    const pet = (await db.query<Pet & { version: number; createdBy: number | null }>(LOCK, [id])).rows[0];
    if (!pet) throw petNotFound(id);
    if (pet.createdBy !== accountId) {
      throw errors.forbidden(pet.createdBy === null ? `Pet ${id} was added before accounts existed; no account may change it.` : `Pet ${id} was created by another account; only its creator may change it.`);
    }
    if (!ifMatchHolds(ifMatch, strongEtag(pet.version))) throw errors.precondition_failed(`Pet ${id} has changed since the ETag in If-Match.`);
    return pet;
  }

  return {
    /** A keyset page; `hasMore` when at least one more pet follows the last one returned. */
    async list(page: { limit: number; status?: PetStatus; categoryId?: number; afterId?: number }): Promise<{ rows: Pet[]; hasMore: boolean }> {
      // One extra row tells whether a next page exists without a COUNT.
      const params: unknown[] = [page.afterId ?? 0, page.limit + 1];
      let sql = LIST;
      if (page.categoryId !== undefined) {
        params.push(page.categoryId);
        sql = page.status ? LIST_BY_CATEGORY_AND_STATUS : LIST_BY_CATEGORY;
      } else if (page.status) sql = LIST_BY_STATUS;
      if (page.status) params.push(page.status);
      params.push(new Date(opts.clock()));
      const { rows } = await pool.query<Pet>(sql, params);
      return pageOf(rows, page.limit);
    },

    /** By `accountId`, in the pool or in the transaction of its Idempotency-Key; `status` is always there (validation applies openapi.yaml's default). */
    async create(pet: NewPet, accountId: number, db: Db = pool): Promise<Pet> {
      return inTransaction(db, async (client) => {
        const { rows } = await client.query<Pet & WrittenEvent>(CREATE_WITH_EVENT, [pet.name, pet.categoryId, pet.status, accountId]);
        const { eventId, queued, ...created } = rows[0]!;
        return created;
      });
    },

    async get(id: number): Promise<VersionedPet | undefined> {
      const row = (await pool.query<Pet & { version: number }>(GET, [id, new Date(opts.clock())])).rows[0];
      return row && versioned(row);
    },

    /**
     * Applies a merge patch for `accountId`. A status other than the current one is refused while
     * an order holds it (a placed one, or a completed one). The lock on the pet's row orders this
     * against placeOrder: whichever comes second sees what the first did.
     */
    async update(id: number, patch: PetPatch, accountId: number, ifMatch: string | undefined, db: Db = pool): Promise<VersionedPet> {
      return inTransaction(db, async (client) => {
        const current = await lockForChange(client, id, accountId, ifMatch);
        // Compared under the lock: a patch that changes nothing (`{}`, or the values the pet has)
        // writes nothing, so no new version, no pet.updated and no webhook for it.
        if (changesNothing(current, patch)) return versioned(current);
        if (patch.status !== undefined && patch.status !== current.status) {
          const order = (await client.query<{ id: number; status: string }>(HOLDING_ORDER, [id])).rows[0];
          if (order) throw errors.pet_status_held_by_order(`The status of pet ${id} is held by order ${order.id} (${order.status}); it changes with that order.`);
        }
        const { rows } = await client.query<Pet & { version: number }>(UPDATE, [id, patch.name ?? null, patch.categoryId ?? null, patch.status ?? null]);
        const updated = versioned(rows[0]!);
        await events.record(client, 'pet.updated', updated.pet, [accountId]);
        return updated;
      });
    },

    /** Removes a pet of `accountId` that has no placed order; its row stays for its orders. */
    async delete(id: number, accountId: number, ifMatch: string | undefined, db: Db = pool): Promise<void> {
      await inTransaction(db, async (client) => {
        await lockForChange(client, id, accountId, ifMatch);
        const order = (await client.query<{ id: number; status: string }>(HOLDING_ORDER, [id])).rows[0];
        if (order?.status === 'placed') throw errors.pet_has_open_order(`Pet ${id} has a placed order (${order.id}); complete or cancel it first.`);
        const { rows } = await client.query<Pet>(DELETE, [id]);
        await events.record(client, 'pet.deleted', rows[0]!, [accountId]);
      });
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

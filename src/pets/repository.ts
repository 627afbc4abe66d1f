import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import type { Refusal } from '../db/refusal.js';
import { errors } from '../errors/apiError.js';
import { ifMatchTags } from '../http/conditional.js';
import { writeRunner, type IdempotencyKey } from '../idempotency/idempotent.js';
import type { Clock } from '../clock.js';
import { GET, LIST, LIST_BY_CATEGORY, LIST_BY_CATEGORY_AND_STATUS, LIST_BY_STATUS } from './sql.js';
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
export const petNotFound = (id: number) => errors.pet_not_found(`Pet ${id} not found.`);

/** The answer to a pet write's refusal (migration 018), for pet `id`. */
function refused(id: number | undefined, { code, detail }: Refusal): Error {
  switch (code) {
    case 'pet_not_found':
      return petNotFound(id!);
    case 'forbidden':
      return errors.forbidden(detail.createdBy === null ? `Pet ${id} was added before accounts existed; no account may change it.` : `Pet ${id} was created by another account; only its creator may change it.`);
    case 'precondition_failed':
      return errors.precondition_failed(`Pet ${id} has changed since the ETag in If-Match.`);
    case 'pet_status_held_by_order':
      return errors.pet_status_held_by_order(`The status of pet ${id} is held by order ${detail.orderId} (${detail.status}); it changes with that order.`);
    case 'pet_has_open_order':
      return errors.pet_has_open_order(`Pet ${id} has a placed order (${detail.orderId}); complete or cancel it first.`);
    default:
      return new Error(`unexpected refusal ${code}`);
  }
}

/**
 * All SQL about pets. Each write is one call of its function (migration 018), its own transaction:
 * the checks, the change, its event with its delivery intents, an ended hold on the pet released
 * first, and with an Idempotency-Key the claim and the saved response. `clock`: the time a hold is
 * checked against (orders/sql.ts); `eventsQueued`: told after a write that queued deliveries.
 */
export function petsRepository(pool: pg.Pool, opts: { clock: Clock; eventsQueued: () => void }) {
  const run = writeRunner(pool, opts.eventsQueued);
  const write = <T>(id: number | undefined, sql: string, params: unknown[]) => run<T>(sql, params, (refusal) => refused(id, refusal));

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

    /** By `accountId`; `status` is always there (validation applies openapi.yaml's default). */
    create: (pet: NewPet, accountId: number, key: IdempotencyKey | null) =>
      write<Pet>(undefined, 'SELECT create_pet($1, $2, $3, $4, $5) AS r', [pet.name, pet.categoryId, pet.status, accountId, key]),

    async get(id: number): Promise<VersionedPet | undefined> {
      const row = (await pool.query<Pet & { version: number }>(GET, [id, new Date(opts.clock())])).rows[0];
      return row && versioned(row);
    },

    /**
     * Applies a merge patch for `accountId`, if `ifMatch` holds. A patch that changes nothing writes
     * nothing. A status other than the current one is refused while an order holds it; the lock on
     * the pet's row orders this against placeOrder: whichever comes second sees what the first did.
     */
    update: (id: number, patch: PetPatch, accountId: number, ifMatch: string | undefined, key: IdempotencyKey | null) =>
      write<Pet>(id, 'SELECT update_pet($1, $2, $3, $4, $5, $6, $7, $8) AS r', [
        id, patch.name ?? null, patch.categoryId ?? null, patch.status ?? null, accountId, ifMatchTags(ifMatch), new Date(opts.clock()), key,
      ]),

    /** Removes a pet of `accountId` that has no placed order; its row stays for its orders. */
    delete: (id: number, accountId: number, ifMatch: string | undefined, key: IdempotencyKey | null) =>
      write<null>(id, 'SELECT delete_pet($1, $2, $3, $4, $5) AS r', [id, accountId, ifMatchTags(ifMatch), new Date(opts.clock()), key]),
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

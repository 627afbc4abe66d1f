import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { KeyInUseError, type IdempotencyScope, type SavedResponse } from '../idempotency/store.js';
import { GET, INSERT, INSERT_KEYED, KEY_IN_USE, LIST, LIST_BY_STATUS } from './sql.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

export interface PetPage {
  pets: Pet[];
  /** True when at least one more pet follows the last one returned. */
  hasMore: boolean;
}

// `status` is always there: validation applies openapi.yaml's default.
const petValues = (pet: NewPet) => [pet.name, pet.categoryId, pet.status];

/** All SQL about pets. */
export function petsRepository(pool: pg.Pool) {
  return {
    async list(opts: { limit: number; status?: PetStatus; afterId?: number }): Promise<PetPage> {
      // One extra row tells whether a next page exists without a COUNT.
      const { rows } = await pool.query<Pet>(
        opts.status ? LIST_BY_STATUS : LIST,
        opts.status ? [opts.afterId ?? 0, opts.limit + 1, opts.status] : [opts.afterId ?? 0, opts.limit + 1],
      );
      const hasMore = rows.length > opts.limit;
      if (hasMore) rows.length = opts.limit; // drop the look-ahead row in place
      return { pets: rows, hasMore };
    },

    async create(pet: NewPet): Promise<Pet> {
      const { rows } = await pool.query<Pet>(INSERT, petValues(pet));
      return rows[0]!;
    },

    /**
     * Creates the pet and saves the response under the idempotency key in one
     * statement, or returns the response saved earlier under that key.
     */
    async createIdempotent(pet: NewPet, scope: IdempotencyScope): Promise<{ saved: SavedResponse<Pet>; replayed: boolean }> {
      const { rows } = await pool
        .query<SavedResponse<Pet> & { replayed: boolean }>(INSERT_KEYED, [scope.apiKeyId, scope.operation, scope.key, scope.requestHash, ...petValues(pet)])
        .catch((err: { code?: string }) => {
          throw err.code === KEY_IN_USE ? new KeyInUseError() : err;
        });
      const { replayed, requestHash, status, body } = rows[0]!;
      // Saved as jsonb, whose key order is its own: the pet's fields in the document's order.
      return { saved: { requestHash, status, body: { id: body.id, name: body.name, categoryId: body.categoryId, status: body.status } }, replayed };
    },

    async get(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<Pet>(GET, [id]);
      return rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

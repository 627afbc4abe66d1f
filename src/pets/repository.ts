import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import type { Db } from '../idempotency/idempotent.js';
import { GET, INSERT, LIST, LIST_BY_STATUS } from './sql.js';

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

    /** In the pool, or in the transaction of its Idempotency-Key. */
    async create(pet: NewPet, db: Db = pool): Promise<Pet> {
      const { rows } = await db.query<Pet>(INSERT, petValues(pet));
      return rows[0]!;
    },

    async get(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<Pet>(GET, [id]);
      return rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

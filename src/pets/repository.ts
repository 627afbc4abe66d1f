import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import type { Db } from '../idempotency/idempotent.js';
import { GET, INSERT, LIST, LIST_BY_STATUS } from './sql.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

/** All SQL about pets. */
export function petsRepository(pool: pg.Pool) {
  return {
    /** A keyset page; `hasMore` when at least one more pet follows the last one returned. */
    async list(opts: { limit: number; status?: PetStatus; afterId?: number }): Promise<{ rows: Pet[]; hasMore: boolean }> {
      // One extra row tells whether a next page exists without a COUNT.
      const params = [opts.afterId ?? 0, opts.limit + 1];
      const { rows } = await pool.query<Pet>(opts.status ? LIST_BY_STATUS : LIST, opts.status ? [...params, opts.status] : params);
      const hasMore = rows.length > opts.limit;
      if (hasMore) rows.length = opts.limit; // drop the look-ahead row in place
      return { rows, hasMore };
    },

    /** By `accountId`, in the pool or in the transaction of its Idempotency-Key; `status` is always there (validation applies openapi.yaml's default). */
    async create(pet: NewPet, accountId: number, db: Db = pool): Promise<Pet> {
      return (await db.query<Pet>(INSERT, [pet.name, pet.categoryId, pet.status, accountId])).rows[0]!;
    },

    async get(id: number): Promise<Pet | undefined> {
      return (await pool.query<Pet>(GET, [id])).rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { withTransaction } from '../db/transaction.js';
import { idempotencyStore, type IdempotencyScope, type SavedResponse } from '../idempotency/store.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

export interface PetPage {
  pets: Pet[];
  /** True when at least one more pet follows the last one returned. */
  hasMore: boolean;
}

const COLUMNS = 'id, name, category_id AS "categoryId", status';

/**
 * Keyset pages: an index range scan from the cursor, the same cost at any depth. Two
 * statements rather than "status = $3 OR $3 IS NULL", so each has one plan: pets_pkey
 * without a filter, pets_status_id_idx with one (see BENCHMARKS.md for the EXPLAIN).
 */
export const LIST = `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`;
export const LIST_BY_STATUS = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND status = $3 ORDER BY id LIMIT $2`;

/**
 * Creates commit in id order: each takes a transaction-scoped advisory lock before its
 * id is drawn and holds it until it commits, so no pet can appear below one a reader has
 * already listed (ids are drawn before commit; without this a slower transaction could
 * commit a lower id after a higher one was read). One statement, so a plain create is
 * still one round trip; the cost is that creates commit one at a time.
 */
const ID_ORDER_LOCK = 727_274_002;
const INSERT_PET = `INSERT INTO pets (name, category_id, status)
  SELECT $1, $2, $3 FROM (SELECT pg_advisory_xact_lock(${ID_ORDER_LOCK})) AS in_id_order
  RETURNING ${COLUMNS}`;
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
      return { pets: hasMore ? rows.slice(0, opts.limit) : rows, hasMore };
    },

    async create(pet: NewPet): Promise<Pet> {
      const { rows } = await pool.query<Pet>(INSERT_PET, petValues(pet));
      return rows[0]!;
    },

    /**
     * Creates the pet and saves the response under the idempotency key in one
     * transaction, or returns the response saved earlier under that key.
     */
    async createIdempotent(pet: NewPet, scope: IdempotencyScope): Promise<{ saved: SavedResponse<Pet>; replayed: boolean }> {
      return withTransaction(pool, async (client) => {
        // Claimed before the id-order lock is taken, so waiting on a twin holds up no other create.
        if (!(await idempotencyStore.claim(client, scope))) {
          return { saved: await idempotencyStore.saved<Pet>(client, scope), replayed: true };
        }
        const created = (await client.query<Pet>(INSERT_PET, petValues(pet))).rows[0]!;
        return { saved: await idempotencyStore.save(client, scope, 201, created), replayed: false };
      });
    },

    async get(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<Pet>(`SELECT ${COLUMNS} FROM pets WHERE id = $1`, [id]);
      return rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

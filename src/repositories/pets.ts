import type pg from 'pg';
import type { components } from '../../generated/openapi.js';
import { withTransaction } from '../db/transaction.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

export interface PetPage {
  pets: Pet[];
  /** True when at least one more pet follows the last one returned. */
  hasMore: boolean;
}

const COLUMNS = 'id, name, category_id AS "categoryId", status';

/** A createPet answer as first given, kept to be replayed for the same Idempotency-Key. */
export interface SavedCreate {
  requestHash: string;
  status: number;
  body: Pet;
  location: string;
}

export interface IdempotencyScope {
  apiKeyId: number;
  key: string;
  requestHash: string;
}

/**
 * Keyset pages: an index range scan from the cursor, the same cost at any depth. Two
 * statements rather than "status = $3 OR $3 IS NULL", so each has one plan: pets_pkey
 * without a filter, pets_status_id_idx with one (see BENCHMARKS.md for the EXPLAIN).
 */
export const LIST = `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`;
export const LIST_BY_STATUS = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND status = $3 ORDER BY id LIMIT $2`;

const INSERT_PET = `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`;
const petValues = (pet: NewPet) => [pet.name, pet.categoryId, pet.status ?? 'available'];
export const petLocation = (id: number) => `/v1/pets/${id}`;

/** All SQL about pets. Pages are keyset pages on id: cost is the same at any depth. */
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
     * transaction, or returns the response saved earlier under that key. A concurrent
     * request with the same key waits on the key's row until the first one commits.
     */
    async createIdempotent(pet: NewPet, scope: IdempotencyScope): Promise<{ saved: SavedCreate; replayed: boolean }> {
      return withTransaction(pool, async (client) => {
        // Waiting on an in-flight twin is bounded: past it, lock_not_available (createPet answers 409).
        await client.query(`SET LOCAL lock_timeout = '5s'`);
        const claimed = await client.query(
          `INSERT INTO idempotency_keys (api_key_id, key, request_hash, status, response_body)
           VALUES ($1, $2, $3, 0, 'null') ON CONFLICT DO NOTHING`,
          [scope.apiKeyId, scope.key, scope.requestHash],
        );
        if (claimed.rowCount === 0) {
          const { rows } = await client.query<SavedCreate>(
            `SELECT request_hash AS "requestHash", status, response_body AS body, location
               FROM idempotency_keys WHERE api_key_id = $1 AND key = $2`,
            [scope.apiKeyId, scope.key],
          );
          return { saved: rows[0]!, replayed: true };
        }
        const created = (await client.query<Pet>(INSERT_PET, petValues(pet))).rows[0]!;
        const saved: SavedCreate = { requestHash: scope.requestHash, status: 201, body: created, location: petLocation(created.id) };
        await client.query(
          `UPDATE idempotency_keys SET status = $3, response_body = $4, location = $5 WHERE api_key_id = $1 AND key = $2`,
          [scope.apiKeyId, scope.key, saved.status, JSON.stringify(saved.body), saved.location],
        );
        return { saved, replayed: false };
      });
    },

    /** Forgets idempotency keys older than the retention (at least 24 hours). */
    async expireIdempotencyKeys(olderThanHours: number): Promise<number> {
      const { rowCount } = await pool.query(
        `DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`,
        [olderThanHours],
      );
      return rowCount ?? 0;
    },

    async get(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<Pet>(`SELECT ${COLUMNS} FROM pets WHERE id = $1`, [id]);
      return rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

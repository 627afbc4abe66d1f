import type pg from 'pg';
import type { components } from '../../generated/openapi.js';

export type Pet = components['schemas']['Pet'];
export type NewPet = components['schemas']['NewPet'];
export type PetStatus = components['schemas']['PetStatus'];

export interface PetPage {
  pets: Pet[];
  /** True when at least one more pet follows the last one returned. */
  hasMore: boolean;
}

const COLUMNS = 'id, name, category_id AS "categoryId", status';

/** All SQL about pets. Pages are keyset pages on id: cost is the same at any depth. */
export function petsRepository(pool: pg.Pool) {
  return {
    async list(opts: { limit: number; status?: PetStatus; afterId?: number }): Promise<PetPage> {
      // One extra row tells whether a next page exists without a COUNT.
      const { rows } = await pool.query<Pet>(
        `SELECT ${COLUMNS} FROM pets
          WHERE id > $1 AND ($2::text IS NULL OR status = $2)
          ORDER BY id LIMIT $3`,
        [opts.afterId ?? 0, opts.status ?? null, opts.limit + 1],
      );
      const hasMore = rows.length > opts.limit;
      return { pets: hasMore ? rows.slice(0, opts.limit) : rows, hasMore };
    },

    async create(pet: NewPet): Promise<Pet> {
      const { rows } = await pool.query<Pet>(
        `INSERT INTO pets (name, category_id, status) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`,
        [pet.name, pet.categoryId, pet.status ?? 'available'],
      );
      return rows[0]!;
    },

    async get(id: number): Promise<Pet | undefined> {
      const { rows } = await pool.query<Pet>(`SELECT ${COLUMNS} FROM pets WHERE id = $1`, [id]);
      return rows[0];
    },
  };
}

export type PetsRepository = ReturnType<typeof petsRepository>;

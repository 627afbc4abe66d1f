import { eventFrom } from '../events/sql.js';

/**
 * Every statement about pets, as text only: the repository runs them, and the benchmark's
 * ceiling (bench/baselineServer.ts) runs the very same ones through a plain pg.Pool.
 * A removed pet (deleted_at set) keeps its row for its orders and is in no answer.
 */
const COLUMNS = 'id, name, category_id AS "categoryId", status';

/**
 * Keyset pages of live pets: an index range scan from the cursor, the same cost at any depth.
 * One statement per combination of filters rather than "status = $3 OR $3 IS NULL", so each
 * has one plan, on the partial index for its filters (migration 010).
 */
const page = (filters: string) => `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND deleted_at IS NULL${filters} ORDER BY id LIMIT $2`;
export const LIST = page('');
export const LIST_BY_STATUS = page(' AND status = $3');
export const LIST_BY_CATEGORY = page(' AND category_id = $3');
export const LIST_BY_CATEGORY_AND_STATUS = page(' AND category_id = $3 AND status = $4');

/** A live pet with its version (its ETag). */
export const GET = `SELECT ${COLUMNS}, version FROM pets WHERE id = $1 AND deleted_at IS NULL`;

/** A live pet locked for a change, with what decides whether the change may happen and whether a patch changes it. */
export const LOCK = `SELECT ${COLUMNS}, version, created_by AS "createdBy" FROM pets WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`;

/** The order that holds a pet's status: a placed one, else a completed one. */
export const HOLDING_ORDER = `SELECT id, status FROM orders WHERE pet_id = $1 AND status IN ('placed', 'completed') ORDER BY status = 'placed' DESC LIMIT 1`;

/** A merge patch: each of $2 name, $3 category, $4 status when given (the version follows by trigger). */
export const UPDATE = `UPDATE pets SET name = coalesce($2, name), category_id = coalesce($3, category_id), status = coalesce($4, status)
  WHERE id = $1 RETURNING ${COLUMNS}, version`;

/** Removes a pet, answering it as it stood (its event's object). */
export const DELETE = `UPDATE pets SET deleted_at = now() WHERE id = $1 RETURNING ${COLUMNS}`;

/**
 * A create takes no lock shared with other creates (issue 35: nothing on a write path serializes
 * all accounts), so creates commit in any order: a pet's id is drawn before its commit, and a
 * slower create can commit a lower id after a higher one was listed. listPets is a browse in id
 * order that may therefore miss a pet whose create was in flight when a page past its id was
 * read (openapi.yaml says so); a reader that must see every create follows listEvents'
 * `pet.created`, which is commit-ordered (pagination/commitOrder.ts).
 */
export const INSERT = `INSERT INTO pets (name, category_id, status, created_by) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`;

/** createPet with its event ($4 the creator reads it), in one statement. */
export const CREATE_WITH_EVENT = `WITH pet AS (${INSERT}), ${eventFrom('pet', { type: "'pet.created'::text", object: 'to_jsonb(pet)', recipients: 'ARRAY[$4]::bigint[]' })}`;

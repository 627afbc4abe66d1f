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

/** A live pet locked for a change, with what decides whether the change may happen. */
export const LOCK = `SELECT version, status, created_by AS "createdBy" FROM pets WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`;

/** The order that holds a pet's status: a placed one, else a completed one. */
export const HOLDING_ORDER = `SELECT id, status FROM orders WHERE pet_id = $1 AND status IN ('placed', 'completed') ORDER BY status = 'placed' DESC LIMIT 1`;

/** A merge patch: each of $2 name, $3 category, $4 status when given (the version follows by trigger). */
export const UPDATE = `UPDATE pets SET name = coalesce($2, name), category_id = coalesce($3, category_id), status = coalesce($4, status)
  WHERE id = $1 RETURNING ${COLUMNS}, version`;

/** Removes a pet, answering it as it stood (its event's object). */
export const DELETE = `UPDATE pets SET deleted_at = now() WHERE id = $1 RETURNING ${COLUMNS}`;

/**
 * Creates commit in id order: each takes a transaction-scoped advisory lock before its
 * id is drawn and holds it until it commits, so no pet can appear below one a reader has
 * already listed (ids are drawn before commit; without this a slower transaction could
 * commit a lower id after a higher one was read). The create's transaction then writes its
 * event in the same statement (CREATE_WITH_EVENT) and commits, so the lock is held for that
 * statement (and the event's delivery jobs when an endpoint subscribes) and the commit, never
 * across other work of the service: creates still commit one at a time, for all instances together
 * (`npm run bench -- --creates` measures create throughput). Events themselves take no such
 * lock: their readers go by transaction id (migration 011).
 */
const ID_ORDER_LOCK = 727_274_002;
export const INSERT = `INSERT INTO pets (name, category_id, status, created_by)
  SELECT $1, $2, $3, $4 FROM (SELECT pg_advisory_xact_lock(${ID_ORDER_LOCK})) AS in_id_order
  RETURNING ${COLUMNS}`;


/**
 * createPet with its event ($4 the creator reads it), in the one statement that takes the lock:
 * the lock is then held for this statement and the commit (and the event's delivery jobs, when
 * an endpoint subscribes), as it was for the insert alone.
 */
export const CREATE_WITH_EVENT = `WITH pet AS (${INSERT}), ${eventFrom('pet', { type: "'pet.created'::text", object: 'to_jsonb(pet)', recipients: 'ARRAY[$4]::bigint[]' })}`;

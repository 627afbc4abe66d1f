/**
 * Every statement about pets, as text only: the repository runs them, and the benchmark's
 * ceiling (bench/baselineServer.ts) runs the very same ones through a plain pg.Pool.
 */
const COLUMNS = 'id, name, category_id AS "categoryId", status';

/**
 * Keyset pages: an index range scan from the cursor, the same cost at any depth. Two
 * statements rather than "status = $3 OR $3 IS NULL", so each has one plan: pets_pkey
 * without a filter, pets_status_id_idx with one.
 */
export const LIST = `SELECT ${COLUMNS} FROM pets WHERE id > $1 ORDER BY id LIMIT $2`;
export const LIST_BY_STATUS = `SELECT ${COLUMNS} FROM pets WHERE id > $1 AND status = $3 ORDER BY id LIMIT $2`;

export const GET = `SELECT ${COLUMNS} FROM pets WHERE id = $1`;

/**
 * Creates commit in id order: each takes a transaction-scoped advisory lock before its
 * id is drawn and holds it until it commits, so no pet can appear below one a reader has
 * already listed (ids are drawn before commit; without this a slower transaction could
 * commit a lower id after a higher one was read). Each create is one statement, committed
 * as it returns, so the lock is held for an insert and a commit, never across a round trip
 * to the service: creates still commit one at a time, for all instances together
 * (`npm run bench -- --creates` measures create throughput).
 */
const ID_ORDER_LOCK = 727_274_002;
export const INSERT = `INSERT INTO pets (name, category_id, status, created_by)
  SELECT $1, $2, $3, $4 FROM (SELECT pg_advisory_xact_lock(${ID_ORDER_LOCK})) AS in_id_order
  RETURNING ${COLUMNS}`;


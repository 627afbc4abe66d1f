/**
 * Every read of pets, as text only: the repository runs them, and the benchmark's ceiling
 * (bench/baselineServer.ts) runs the very same ones through a plain pg.Pool. The writes are
 * functions of migration 018, which both call. A removed pet (deleted_at set) keeps its row for
 * its orders and is in no answer.
 *
 * A create takes no lock shared with other creates (issue 35: nothing on a write path serializes
 * all accounts), so creates commit in any order: a pet's id is drawn before its commit, and a
 * slower create can commit a lower id after a higher one was listed. listPets is a browse in id
 * order that may therefore miss a pet whose create was in flight when a page past its id was
 * read (openapi.yaml says so); a reader that must see every create follows listEvents'
 * `pet.created`, which is commit-ordered (pagination/commitOrder.ts).
 */

/**
 * Whether the pet is pending only by a placed order whose hold ended at `now` (a parameter, the
 * instance's clock: orders/sql.ts): from the order's expiresAt the pet reads as `available`, before
 * the sweep writes it so. One probe of orders_one_placed_per_pet, for pending pets only.
 */
const lapsed = (now: string) =>
  `CASE WHEN pets.status = 'pending' THEN EXISTS (SELECT 1 FROM orders o WHERE o.pet_id = pets.id AND o.status = 'placed' AND o.expires_at <= ${now}::timestamptz) ELSE false END`;
/** A pet as the document's Pet at `now`. */
const shown = (now: string) => `id, name, category_id AS "categoryId", CASE WHEN ${lapsed(now)} THEN 'available' ELSE status END AS status`;

/**
 * Keyset pages of live pets: an index range scan from the cursor, the same cost at any depth.
 * One statement per combination of filters rather than "status = $3 OR $3 IS NULL", so each
 * has one plan, on the partial index for its filters (migration 010). The time is the last
 * parameter. By status, two ranges merged: the pets stored with that status (less those whose
 * hold ended, when it is `pending`), and, for `available`, the pending ones whose hold ended,
 * found from the due orders (orders_placed_expires_at_idx: those since the last sweep).
 */
const page = (filters: string, now: string) => `SELECT ${shown(now)} FROM pets WHERE id > $1 AND deleted_at IS NULL${filters} ORDER BY id LIMIT $2`;
const pageByStatus = (filters: string, status: string, now: string) => `SELECT * FROM (
    (SELECT ${shown(now)} FROM pets WHERE id > $1 AND deleted_at IS NULL${filters} AND status = ${status} AND NOT ${lapsed(now)} ORDER BY id LIMIT $2)
    UNION ALL
    (SELECT ${shown(now)} FROM pets WHERE ${status} = 'available' AND id > $1 AND deleted_at IS NULL${filters} AND status = 'pending'
        AND id IN (SELECT pet_id FROM orders WHERE status = 'placed' AND expires_at <= ${now}::timestamptz) ORDER BY id LIMIT $2)
  ) page ORDER BY id LIMIT $2`;
export const LIST = page('', '$3');
export const LIST_BY_STATUS = pageByStatus('', '$3', '$4');
export const LIST_BY_CATEGORY = page(' AND category_id = $3', '$4');
export const LIST_BY_CATEGORY_AND_STATUS = pageByStatus(' AND category_id = $3', '$4', '$5');

/**
 * A live pet with its version (its ETag) at $2, the time now. A hold that ended shows the version
 * its expiry writes (the status change bumps it by one): the ETag is the same before the sweep and
 * after it, and an If-Match with it holds (a change expires the hold first: repository.ts).
 */
export const GET = `SELECT ${shown('$2')}, version + (${lapsed('$2')})::int AS version FROM pets WHERE id = $1 AND deleted_at IS NULL`;

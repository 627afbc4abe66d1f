import { isoTimestamp } from '../db/isoTimestamp.js';

/**
 * Every statement about adoption orders, as text only: the repository runs them, and a
 * benchmark ceiling can run the very same ones through a plain pg.Pool. Each change of
 * state is one statement (so one transaction) that moves the order and its pet together,
 * guarded in its WHERE clause so that of concurrent requests exactly one matches.
 */

/**
 * The one clock of a hold: the instance's (src/clock.ts), passed in as a parameter, never the
 * database's now(). An order's created_at, expires_at and updated_at are written with it and every
 * check of a hold compares with it (the cap, placement, complete and cancel, the reads, the sweep,
 * whose scheduler passes the same clock): it is the clock the service injects, so tests move time
 * for all of them at once, and no answer mixes two clocks. Instances read their own clocks, so a
 * hold is as exact as they agree, as for API keys' expiresAt (docs/ACCOUNTS.md).
 */

/** Whether a `placed` order's hold has ended at `now` (a parameter): from then on it shows, and counts, as `expired`. */
const lapsed = (now: string, t = '') => `(${t}status = 'placed' AND ${t}expires_at <= ${now}::timestamptz)`;

/**
 * An order as the document's Order at `now`; `t` qualifies the columns where another table's would
 * clash (`orders.`). A placed order past its hold reads as `expired` since its expiresAt (its
 * updatedAt), before the sweep writes it so (EXPIRE_DUE writes the very same values).
 */
const shownColumns = (now: string, t = '') =>
  columns(t, `CASE WHEN ${lapsed(now, t)} THEN 'expired' ELSE ${t}status END`, `CASE WHEN ${lapsed(now, t)} THEN ${t}expires_at ELSE ${t}updated_at END`);
/** An order as a change left it (no hold to compare: a change's row is never a lapsed placed one), or with the status and update time given. */
function columns(t = '', status = `${t}status`, updatedAt = `${t}updated_at`) {
  return `${t}id AS id, ${t}pet_id AS "petId", ${status} AS status, ${isoTimestamp(`${t}created_at`)} AS "createdAt", ${isoTimestamp(updatedAt)} AS "updatedAt", ${isoTimestamp(`${t}expires_at`)} AS "expiresAt"`;
}
const COLUMNS = columns();

/**
 * A placement's transaction first locks its account's row ($1; every order's account has one,
 * orders.account_id references it), held until commit: placements of one account commit one at
 * a time, in id order, so no order can appear below one its owner has already listed, and PLACE,
 * a statement after the lock, counts every placed order of the account. Different accounts never
 * wait on each other, whatever their ids (the advisory key this replaced, the id modulo 2^31,
 * made accounts 2^31 apart share one). FOR NO KEY UPDATE, not FOR UPDATE: the foreign-key
 * checks of rows naming an account (a pet's created_by, an event's recipients, an order placed
 * for another account's pet) take FOR KEY SHARE, which it does not block, so two accounts
 * placing orders for each other's pets never wait on each other. It does wait for a change to the
 * account's keys or webhook endpoints (FOR UPDATE on the same row), which waits for nothing else.
 */
export const LOCK_OWNER = `SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE`;

/**
 * After LOCK_OWNER and RELEASE_PET_HOLD: $1 pet id, $2 account id, $3 placed orders the account may
 * hold, $4 the hold in seconds, $5 the time now (the instance's clock). The pet moves available ->
 * pending only if it is live and available (a concurrent placement or removal waits on the pet's
 * row, then finds it changed and matches nothing) and the account holds fewer than $3 placed
 * orders whose hold has not ended; the order is inserted only if the pet moved. It is created at
 * $5 and its hold ends $4 seconds later, to the millisecond, so the expiresAt a client reads is the
 * exact instant. No row: see PET_STATUS.
 */
export const PLACE = `WITH pet AS (
    UPDATE pets SET status = 'pending'
     WHERE id = $1 AND status = 'available' AND deleted_at IS NULL
       AND (SELECT count(*) FROM orders WHERE account_id = $2 AND status = 'placed' AND expires_at > $5::timestamptz) < $3
    RETURNING id
  )
  INSERT INTO orders (pet_id, account_id, created_at, updated_at, expires_at)
  SELECT pet.id, $2, $5::timestamptz, $5::timestamptz, date_trunc('milliseconds', $5::timestamptz + make_interval(secs => $4)) FROM pet
  RETURNING ${COLUMNS}`;

/** An order's pet as its change left it (its event's object), and who created it. */
export const PET_AFTER = `SELECT id, name, category_id AS "categoryId", status, created_by AS "createdBy" FROM pets WHERE id = $1`;

/** Why a placement matched nothing: no row (no such live pet), the pet's status, else the account's placed orders. */
export const PET_STATUS = `SELECT status FROM pets WHERE id = $1 AND deleted_at IS NULL`;

/**
 * $1 order id, $2 account id, $3 the time now (the injected clock's): a placed order of this
 * account whose hold has not ended moves to `orderStatus` and its pet from pending to
 * `petStatus`. Of a concurrent complete and cancel (or expiry), the second waits on the order's
 * row, then finds it no longer placed and matches nothing. The hold is checked here, not left to
 * the sweep: however late the sweep runs, no order is completed after its expiresAt. No row: see
 * ORDER_STATUS.
 */
const transition = (orderStatus: string, petStatus: string) => `WITH changed AS (
    UPDATE orders SET status = '${orderStatus}', updated_at = $3::timestamptz
     WHERE id = $1 AND account_id = $2 AND status = 'placed' AND expires_at > $3::timestamptz
    RETURNING ${COLUMNS}
  ), pet AS (
    UPDATE pets SET status = '${petStatus}' FROM changed WHERE pets.id = changed."petId" AND pets.status = 'pending' RETURNING pets.id
  )
  SELECT changed.* FROM changed JOIN pet ON pet.id = changed."petId"`;

export const COMPLETE = transition('completed', 'sold');
export const CANCEL = transition('cancelled', 'available');

/**
 * Expires the placed orders `due` selects (a CTE of order ids, locked): each moves to `expired`,
 * updated at its expiresAt (when its hold ended, as the reads showed it), and its pet from pending
 * to available; each row has the order, its owner and the pet after the change (for the events).
 * The status guard makes it exactly once per order, whichever path gets there first.
 */
const expire = (due: string) => `WITH due AS (${due}), changed AS (
    UPDATE orders SET status = 'expired', updated_at = orders.expires_at FROM due
     WHERE orders.id = due.id AND orders.status = 'placed'
    RETURNING ${columns('orders.')}, orders.account_id AS owner
  ), pet AS (
    UPDATE pets SET status = 'available' FROM changed WHERE pets.id = changed."petId" AND pets.status = 'pending'
    RETURNING pets.id, pets.name, pets.category_id AS "categoryId", pets.status, pets.created_by AS "createdBy"
  )
  SELECT to_jsonb(changed) - 'owner' AS "order", changed.owner, to_jsonb(pet) AS pet
    FROM changed JOIN pet ON pet.id = changed."petId"`;

/**
 * The expiry sweep, one batch ($1 the time now, $2 most orders): placed orders whose hold ended.
 * Due orders are read by orders_placed_expires_at_idx; SKIP LOCKED passes over an order a complete,
 * cancel or placement holds: if that commits, the order is no longer placed; if it fails, the next
 * batch or sweep takes the order.
 */
export const EXPIRE_DUE = expire(`SELECT id FROM orders WHERE ${lapsed('$1')} ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`);

/**
 * Before a change that needs a pet's hold (placeOrder, updatePet, deletePet): $1 the time now,
 * $2 pet id. The pet's placed order whose hold has ended, if any, expires here, with its events,
 * as the sweep would. It waits for a sweep or a complete holding the order, then finds it no longer
 * placed (or still placed and still lapsed) and matches only what is still to do. Locks the
 * order's row, then the pet's: the order the sweep, complete and cancel take them in.
 */
export const RELEASE_PET_HOLD = expire(`SELECT id FROM orders WHERE pet_id = $2 AND ${lapsed('$1')} FOR UPDATE`);

/** Why a transition matched nothing: no row (no such order of this account), or the order's status and hold. */
export const ORDER_STATUS = `SELECT status, ${isoTimestamp('expires_at')} AS "expiresAt" FROM orders WHERE id = $1 AND account_id = $2`;

/** $1 order id, $2 account id, $3 the time now. */
export const GET = `SELECT ${shownColumns('$3')} FROM orders WHERE id = $1 AND account_id = $2`;

/**
 * One owner's keyset pages ($1 account id, $2 after this id, $3 rows, $4 the time now, $5 status):
 * an index range scan from the cursor. Two statements, as for pets, so each has one plan. By
 * status, two ranges merged: the orders stored with that status (less those whose hold ended, when
 * it is `placed`), and, for `expired`, the placed ones whose hold ended, which the account's cap
 * keeps few (at most its plan's number, plus those that ended since the last sweep).
 */
export const LIST = `SELECT ${shownColumns('$4')} FROM orders WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`;
export const LIST_BY_STATUS = `SELECT * FROM (
    (SELECT ${shownColumns('$4')} FROM orders WHERE account_id = $1 AND id > $2 AND status = $5 AND NOT ${lapsed('$4')} ORDER BY id LIMIT $3)
    UNION ALL
    (SELECT ${shownColumns('$4')} FROM orders WHERE $5 = 'expired' AND account_id = $1 AND id > $2 AND ${lapsed('$4')} ORDER BY id LIMIT $3)
  ) page ORDER BY id LIMIT $3`;

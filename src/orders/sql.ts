import { isoTimestamp } from '../db/isoTimestamp.js';

/**
 * Every read of adoption orders, as text only: the repository runs them, and the benchmark's
 * ceiling the very same ones through a plain pg.Pool. The writes are functions of migration 018
 * (place_order, transition_order, expire_orders), which both call: each moves the order and its
 * pet together, guarded so that of concurrent requests exactly one matches.
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
const lapsed = (now: string) => `(status = 'placed' AND expires_at <= ${now}::timestamptz)`;

/**
 * An order as the document's Order at `now` (the write functions' order_object, migration 018, for
 * the row as it is). A placed order past its hold reads as `expired` since its expiresAt (its
 * updatedAt), before the sweep writes it so (expire_orders writes the very same values).
 */
const shownColumns = (now: string) => {
  const status = `CASE WHEN ${lapsed(now)} THEN 'expired' ELSE status END`;
  const updatedAt = `CASE WHEN ${lapsed(now)} THEN expires_at ELSE updated_at END`;
  return `id, pet_id AS "petId", ${status} AS status, ${isoTimestamp('created_at')} AS "createdAt", ${isoTimestamp(updatedAt)} AS "updatedAt", ${isoTimestamp('expires_at')} AS "expiresAt"`;
};

/**
 * A placement (place_order) first locks its account's row (every order's account has one,
 * orders.account_id references it), held until commit: placements of one account commit one at
 * a time, in id order, so no order can appear below one its owner has already listed, and the cap's
 * count, a statement after the lock, counts every placed order of the account. Different accounts never
 * wait on each other, whatever their ids (the advisory key this replaced, the id modulo 2^31,
 * made accounts 2^31 apart share one). FOR NO KEY UPDATE, not FOR UPDATE: the foreign-key
 * checks of rows naming an account (a pet's created_by, an event's recipients, an order placed
 * for another account's pet) take FOR KEY SHARE, which it does not block, so two accounts
 * placing orders for each other's pets never wait on each other. It does wait for a change to the
 * account's keys or webhook endpoints (FOR UPDATE on the same row), which waits for nothing else.
 */

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

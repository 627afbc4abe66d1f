import { isoTimestamp } from '../db/isoTimestamp.js';

/**
 * Every statement about adoption orders, as text only: the repository runs them, and a
 * benchmark ceiling can run the very same ones through a plain pg.Pool. Each change of
 * state is one statement (so one transaction) that moves the order and its pet together,
 * guarded in its WHERE clause so that of concurrent requests exactly one matches.
 */

const COLUMNS = `id, pet_id AS "petId", status, ${isoTimestamp('created_at')} AS "createdAt", ${isoTimestamp('updated_at')} AS "updatedAt"`;

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
 * After LOCK_OWNER: $1 pet id, $2 account id, $3 placed orders the account may hold. The pet
 * moves available -> pending only if it is live and available (a concurrent placement or
 * removal waits on the pet's row, then finds it changed and matches nothing) and the account
 * holds fewer than $3; the order is inserted only if the pet moved. No row: see PET_STATUS.
 */
export const PLACE = `WITH pet AS (
    UPDATE pets SET status = 'pending'
     WHERE id = $1 AND status = 'available' AND deleted_at IS NULL
       AND (SELECT count(*) FROM orders WHERE account_id = $2 AND status = 'placed') < $3
    RETURNING id
  )
  INSERT INTO orders (pet_id, account_id)
  SELECT pet.id, $2 FROM pet
  RETURNING ${COLUMNS}`;

/** An order's pet as its change left it (its event's object), and who created it. */
export const PET_AFTER = `SELECT id, name, category_id AS "categoryId", status, created_by AS "createdBy" FROM pets WHERE id = $1`;

/** Why a placement matched nothing: no row (no such live pet), the pet's status, else the account's placed orders. */
export const PET_STATUS = `SELECT status FROM pets WHERE id = $1 AND deleted_at IS NULL`;

/**
 * $1 order id, $2 account id: a placed order of this account moves to `orderStatus` and its
 * pet from pending to `petStatus`. Of a concurrent complete and cancel, the second waits
 * on the order's row, then finds it no longer placed and matches nothing. No row: see
 * ORDER_STATUS.
 */
const transition = (orderStatus: string, petStatus: string) => `WITH changed AS (
    UPDATE orders SET status = '${orderStatus}', updated_at = now()
     WHERE id = $1 AND account_id = $2 AND status = 'placed'
    RETURNING ${COLUMNS}
  ), pet AS (
    UPDATE pets SET status = '${petStatus}' FROM changed WHERE pets.id = changed."petId" AND pets.status = 'pending' RETURNING pets.id
  )
  SELECT changed.* FROM changed JOIN pet ON pet.id = changed."petId"`;

export const COMPLETE = transition('completed', 'sold');
export const CANCEL = transition('cancelled', 'available');

/** Why a transition matched nothing: no row (no such order of this account), or the order's status. */
export const ORDER_STATUS = `SELECT status FROM orders WHERE id = $1 AND account_id = $2`;

export const GET = `SELECT ${COLUMNS} FROM orders WHERE id = $1 AND account_id = $2`;

/**
 * One owner's keyset pages ($1 account id, $2 after this id, $3 rows, $4 status): an index
 * range scan from the cursor. Two statements, as for pets, so each has one plan.
 */
export const LIST = `SELECT ${COLUMNS} FROM orders WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT $3`;
export const LIST_BY_STATUS = `SELECT ${COLUMNS} FROM orders WHERE account_id = $1 AND id > $2 AND status = $4 ORDER BY id LIMIT $3`;

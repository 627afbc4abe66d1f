-- Order holds (issue 38): a placed order holds its animal until `expires_at`, then the expiry
-- sweep (orders/expiry.ts, on pg-boss's scheduler) moves it to `expired` and the animal back to
-- `available`; complete and cancel check the time themselves, so none lands after it.

-- Earlier migrations of the same run may have left deferred checks (migration 010's agreement
-- triggers) pending, and ALTER TABLE refuses a table with pending trigger events: run them now.
SET CONSTRAINTS ALL IMMEDIATE;

ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('placed', 'completed', 'cancelled', 'expired'));

-- Every order has its hold's end, so `expiresAt` is never null in the API. Orders placed before
-- holds existed get a full default hold (three days, ORDER_HOLD_SECONDS' default) from this
-- migration, not from their placement: none expires the moment the release that introduces
-- expiry starts (the column's default, evaluated once for every existing row). Completed and
-- cancelled orders get created_at plus the default hold, which only records it: a final order
-- never expires. The default stays for writers other than the service (scripts, psql); the
-- service always sets its own (ORDER_HOLD_SECONDS).
ALTER TABLE orders ADD COLUMN expires_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now() + interval '259200 seconds');

-- The sweep's range: placed orders by their end, due ones first.
CREATE INDEX orders_placed_expires_at_idx ON orders (expires_at) WHERE status = 'placed';

-- Last, as they are row changes: no ALTER after them.
UPDATE orders SET expires_at = created_at + interval '259200 seconds' WHERE status <> 'placed';
-- A placeOrder answer saved for its Idempotency-Key before holds existed is replayed as the
-- Order the document now describes: with its order's expiresAt.
UPDATE idempotency_keys k
   SET response_body = k.response_body || jsonb_build_object('expiresAt', to_char(o.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
  FROM orders o
 WHERE k.operation = 'placeOrder' AND k.status = 201 AND NOT k.response_body ? 'expiresAt' AND o.id = (k.response_body->>'id')::bigint;

-- The agreement check of migration 010 (pet_order_disagreements, its constraint triggers) counts
-- only placed and completed orders, so an expired order already holds nothing, as a cancelled
-- one (the animal is outside the workflow again). The view and its triggers stay as they are;
-- the comment says so where psql shows it.
COMMENT ON VIEW pet_order_disagreements IS
  'Pets whose status disagrees with their placed or completed orders; cancelled and expired orders hold nothing.';

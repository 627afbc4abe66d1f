-- Order holds (issue 38): a placed order holds its animal until `expires_at`, then the expiry
-- sweep (orders/expiry.ts, on pg-boss's scheduler) moves it to `expired` and the animal back to
-- `available`; complete and cancel check the time themselves, so none lands after it.

ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN ('placed', 'completed', 'cancelled', 'expired'));

-- Every order has its hold's end, so `expiresAt` is never null in the API. Orders placed before
-- holds existed get a full default hold (three days, ORDER_HOLD_SECONDS' default) from this
-- migration, not from their placement: none expires the moment the release that introduces
-- expiry starts. Completed and cancelled orders get created_at plus the default hold, which
-- only records it: a final order never expires.
ALTER TABLE orders ADD COLUMN expires_at timestamptz;
UPDATE orders SET expires_at = CASE WHEN status = 'placed' THEN now() ELSE created_at END + interval '259200 seconds';
ALTER TABLE orders ALTER COLUMN expires_at SET NOT NULL;
-- For writers other than the service (scripts, psql): the default hold. The service always sets
-- its own (ORDER_HOLD_SECONDS).
ALTER TABLE orders ALTER COLUMN expires_at SET DEFAULT date_trunc('milliseconds', now() + interval '259200 seconds');

-- The sweep's range: placed orders by their end, due ones first.
CREATE INDEX orders_placed_expires_at_idx ON orders (expires_at) WHERE status = 'placed';

-- The agreement check of migration 010 (pet_order_disagreements, its constraint triggers) counts
-- only placed and completed orders, so an expired order already holds nothing, as a cancelled
-- one (the animal is outside the workflow again). The view and its triggers stay as they are;
-- the comment says so where psql shows it.
COMMENT ON VIEW pet_order_disagreements IS
  'Pets whose status disagrees with their placed or completed orders; cancelled and expired orders hold nothing.';

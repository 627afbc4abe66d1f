-- release_pet_hold (migration 018) called expire_orders on every placeOrder, updatePet and deletePet, with
-- an empty list when the pet had no lapsed hold (nearly always), and expire_orders' statement, a CTE of two
-- updates, is planned and run for nothing: 3 to 7 ms of CPU each, under the account's lock for a placement
-- (test/orders/concurrency.test.ts: 250 racing placements took 10 s, 2.8 s before migration 018). Now it
-- locks the pet's lapsed placed orders first and calls expire_orders only when there is one.
CREATE OR REPLACE FUNCTION release_pet_hold(p_now timestamptz, p_pet bigint) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_lapsed bigint[];
BEGIN
  v_lapsed := ARRAY(SELECT id FROM orders WHERE pet_id = p_pet AND status = 'placed' AND expires_at <= p_now FOR UPDATE);
  IF cardinality(v_lapsed) = 0 THEN RETURN 0; END IF;
  RETURN (SELECT queued FROM expire_orders(v_lapsed));
END $$;

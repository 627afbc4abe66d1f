-- A create with an Idempotency-Key in one statement, committed as it returns: the key is
-- claimed first (waiting on a twin takes no global lock), then the id-order lock is taken
-- for the insert, the saved response and the commit only. As statements of a transaction
-- the lock was held across two round trips to the service, so every create queued behind
-- the slowest event loop of any instance (src/pets/sql.ts, ID_ORDER_LOCK).
CREATE FUNCTION create_pet_keyed(
  p_api_key_id bigint, p_operation text, p_key text, p_request_hash text,
  p_name text, p_category_id bigint, p_status text, p_id_order_lock bigint
) RETURNS TABLE (replayed boolean, request_hash text, status integer, body jsonb)
LANGUAGE plpgsql AS $$
DECLARE
  pet jsonb;
BEGIN
  BEGIN
    INSERT INTO idempotency_keys (api_key_id, operation, key, request_hash, status, response_body)
    VALUES (p_api_key_id, p_operation, p_key, p_request_hash, 0, 'null') ON CONFLICT DO NOTHING;
  EXCEPTION WHEN lock_not_available THEN
    -- Only a twin (the same key, still in flight) holds this row past the lock timeout.
    RAISE EXCEPTION 'A request with this Idempotency-Key is still in progress.' USING ERRCODE = 'AS409';
  END;
  IF NOT FOUND THEN
    RETURN QUERY SELECT true, k.request_hash, k.status, k.response_body
      FROM idempotency_keys k WHERE k.api_key_id = p_api_key_id AND k.operation = p_operation AND k.key = p_key;
    RETURN;
  END IF;
  -- The table's own lock first, as a plain INSERT takes it (when parsed): a create blocked
  -- on the table (an ALTER, a LOCK elsewhere) must not wait while holding the id-order lock.
  LOCK TABLE pets IN ROW EXCLUSIVE MODE;
  PERFORM pg_advisory_xact_lock(p_id_order_lock);
  INSERT INTO pets (name, category_id, status) VALUES (p_name, p_category_id, p_status)
    RETURNING jsonb_build_object('id', id, 'name', name, 'categoryId', category_id, 'status', pets.status) INTO pet;
  UPDATE idempotency_keys k SET status = 201, response_body = pet
    WHERE k.api_key_id = p_api_key_id AND k.operation = p_operation AND k.key = p_key;
  RETURN QUERY SELECT false, p_request_hash, 201, pet;
END
$$;

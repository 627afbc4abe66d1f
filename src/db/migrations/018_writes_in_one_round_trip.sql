-- Writes in one round trip (issue 45). Each write of pets and orders is one function call, in its
-- own transaction (autocommit): its checks, its change, its events with their delivery intents
-- (webhook_outbox, migration 017) and, with an Idempotency-Key, the claim and the saved response.
-- Locks taken inside (an account's row, a pet's row) are held for the database's own work only,
-- never across a round trip to the service. Statements in a function take a new snapshot each, as
-- the statements of the READ COMMITTED transactions they replace did: a count after a lock sees
-- what committed while it waited.
--
-- A refusal raises SQLSTATE 'ASREF' with the error code as its message and what the answer names
-- as JSON in its detail (src/db/refusal.ts); raising rolls the whole call back, claim included.
-- Objects are the document's shapes: Pet {id, name, categoryId, status}; Order with date-times as
-- src/db/isoTimestamp.ts writes them (UTC, milliseconds).

CREATE FUNCTION refuse(p_code text, p_detail jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'ASREF', MESSAGE = p_code, DETAIL = p_detail::text;
END $$;

CREATE FUNCTION iso_timestamp(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION order_object(o orders) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('id', o.id, 'petId', o.pet_id, 'status', o.status,
    'createdAt', iso_timestamp(o.created_at), 'updatedAt', iso_timestamp(o.updated_at), 'expiresAt', iso_timestamp(o.expires_at))
$$;

CREATE FUNCTION pet_object(p pets) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('id', p.id, 'name', p.name, 'categoryId', p.category_id, 'status', p.status)
$$;

-- An event, who may read it (nulls and repeats ignored), and a delivery intent for each enabled
-- endpoint of those accounts subscribed to its type. Returns how many intents it wrote (the
-- service nudges its outbox dispatcher when any).
CREATE FUNCTION record_event(p_type text, p_object jsonb, p_recipients bigint[]) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_id bigint;
  v_xid xid8;
  v_queued integer;
BEGIN
  INSERT INTO events (type, object) VALUES (p_type, p_object) RETURNING id, xid INTO v_id, v_xid;
  INSERT INTO event_recipients (account_id, event_id, type, xid)
    SELECT DISTINCT a, v_id, p_type, v_xid FROM unnest(p_recipients) AS a WHERE a IS NOT NULL;
  INSERT INTO webhook_outbox (event_id, endpoint_id, account_id)
    SELECT v_id, w.id, w.account_id FROM webhook_endpoints w
     WHERE w.account_id = ANY (p_recipients) AND w.status = 'enabled' AND w.event_types && ARRAY[p_type, '*'];
  GET DIAGNOSTICS v_queued = ROW_COUNT;
  RETURN v_queued;
END $$;

-- The one Idempotency-Key mechanism (src/idempotency/idempotent.ts). p_key: NULL (no key), or
-- {account, operation, key, hash, params, status}. Claims the key before the write takes any lock
-- of its own, so waiting on a twin still running holds up nothing else (up to lock_timeout, then
-- idempotency_key_in_use). Returns NULL when claimed, else the saved response to replay.
CREATE FUNCTION idempotency_claim(p_key jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_saved jsonb;
BEGIN
  IF p_key IS NULL THEN RETURN NULL; END IF;
  BEGIN
    INSERT INTO idempotency_keys (account_id, operation, key, request_hash, request_params, status, response_body)
    VALUES ((p_key->>'account')::bigint, p_key->>'operation', p_key->>'key', p_key->>'hash', nullif(p_key->'params', 'null'), 0, 'null')
    ON CONFLICT DO NOTHING;
  EXCEPTION WHEN lock_not_available THEN
    PERFORM refuse('idempotency_key_in_use');
  END;
  IF FOUND THEN RETURN NULL; END IF;
  SELECT jsonb_build_object('replayed', true, 'hash', request_hash, 'params', request_params, 'status', status, 'body', response_body, 'headers', response_headers)
    INTO v_saved
    FROM idempotency_keys WHERE account_id = (p_key->>'account')::bigint AND operation = p_key->>'operation' AND key = p_key->>'key';
  -- Gone between the conflict and the read (the retention sweep): as if still in progress; a retry claims it.
  IF v_saved IS NULL THEN PERFORM refuse('idempotency_key_in_use'); END IF;
  RETURN v_saved;
END $$;

-- The response saved with a claimed key, in the write's transaction: neither exists without the other.
CREATE FUNCTION idempotency_save(p_key jsonb, p_body jsonb, p_headers jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_key IS NULL THEN RETURN; END IF;
  UPDATE idempotency_keys SET status = (p_key->>'status')::int, response_body = coalesce(p_body, 'null'), response_headers = p_headers
   WHERE account_id = (p_key->>'account')::bigint AND operation = p_key->>'operation' AND key = p_key->>'key';
END $$;

-- Expires the placed orders among p_ids (locked by the caller): each to `expired`, updated at its
-- expiresAt (when its hold ended, as the reads showed it), its pet from pending to available, with
-- order.expired (owner and the pet's creator) and pet.updated (creator). The status guard makes it
-- exactly once per order, whichever path gets there first.
CREATE FUNCTION expire_orders(p_ids bigint[], OUT expired integer, OUT queued integer) LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  expired := 0;
  queued := 0;
  FOR r IN
    WITH changed AS (
      UPDATE orders SET status = 'expired', updated_at = orders.expires_at
       WHERE orders.id = ANY (p_ids) AND orders.status = 'placed'
      RETURNING orders.*
    ), pet AS (
      UPDATE pets SET status = 'available' FROM changed WHERE pets.id = changed.pet_id AND pets.status = 'pending'
      RETURNING pets.*
    )
    SELECT order_object(changed) AS "order", changed.account_id AS owner, pet_object(pet) AS pet, pet.created_by
      FROM changed JOIN pet ON pet.id = changed.pet_id ORDER BY changed.id
  LOOP
    queued := queued + record_event('order.expired', r."order", ARRAY[r.owner, r.created_by]);
    queued := queued + record_event('pet.updated', r.pet, ARRAY[r.created_by]);
    expired := expired + 1;
  END LOOP;
END $$;

-- Before a change that needs a pet's hold (placeOrder, updatePet, deletePet): the pet's placed
-- order whose hold ended at p_now, if any, expires here, as the sweep would. Locks the order's row,
-- then (expire_orders) the pet's: the order the sweep, complete and cancel take them in. Returns
-- the delivery intents written.
CREATE FUNCTION release_pet_hold(p_now timestamptz, p_pet bigint) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT queued FROM expire_orders(ARRAY(
    SELECT id FROM orders WHERE pet_id = p_pet AND status = 'placed' AND expires_at <= p_now FOR UPDATE)));
END $$;

-- createPet. Takes no lock shared with other creates (src/pets/sql.ts says what that means for listPets).
CREATE FUNCTION create_pet(p_name text, p_category bigint, p_status text, p_owner bigint, p_key jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_saved jsonb;
  v_pet pets;
  v_body jsonb;
  v_queued integer;
BEGIN
  v_saved := idempotency_claim(p_key);
  IF v_saved IS NOT NULL THEN RETURN v_saved; END IF;
  INSERT INTO pets (name, category_id, status, created_by) VALUES (p_name, p_category, p_status, p_owner) RETURNING * INTO v_pet;
  v_body := pet_object(v_pet);
  v_queued := record_event('pet.created', v_body, ARRAY[p_owner]);
  PERFORM idempotency_save(p_key, v_body);
  RETURN jsonb_build_object('body', v_body, 'version', v_pet.version, 'queued', v_queued);
END $$;

-- A live pet locked for a change by p_owner, checked in this order: it exists (pet_not_found), the
-- account created it (forbidden) and If-Match holds (precondition_failed). p_if_match: NULL when
-- absent, else its tags; '*' or the pet's strong tag ('"<version>"', src/http/conditional.ts's
-- strongEtag) holds. Run after release_pet_hold: an ended hold is released first, as the sweep would.
CREATE FUNCTION lock_pet_for_change(p_id bigint, p_owner bigint, p_if_match text[]) RETURNS pets LANGUAGE plpgsql AS $$
DECLARE
  pet pets;
BEGIN
  SELECT * INTO pet FROM pets WHERE id = p_id AND deleted_at IS NULL FOR UPDATE;
  IF NOT FOUND THEN PERFORM refuse('pet_not_found'); END IF;
  IF pet.created_by IS DISTINCT FROM p_owner THEN
    PERFORM refuse('forbidden', jsonb_build_object('createdBy', pet.created_by));
  END IF;
  IF p_if_match IS NOT NULL AND NOT ('*' = ANY (p_if_match) OR '"' || pet.version || '"' = ANY (p_if_match)) THEN
    PERFORM refuse('precondition_failed');
  END IF;
  RETURN pet;
END $$;

-- The order that holds a pet's status: a placed one, else a completed one.
CREATE FUNCTION holding_order(p_pet bigint) RETURNS orders LANGUAGE sql STABLE AS $$
  SELECT * FROM orders WHERE pet_id = p_pet AND status IN ('placed', 'completed') ORDER BY status = 'placed' DESC LIMIT 1
$$;

-- updatePet: a merge patch (each of name, category, status when not NULL). A patch that changes
-- nothing writes nothing (no version, no event). A status other than the current one is refused
-- while an order holds it. The ETag of the answer is saved with an Idempotency-Key.
CREATE FUNCTION update_pet(p_id bigint, p_name text, p_category bigint, p_status text, p_owner bigint, p_if_match text[], p_now timestamptz, p_key jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_saved jsonb;
  v_pet pets;
  v_order orders;
  v_queued integer := 0;
  v_body jsonb;
BEGIN
  v_saved := idempotency_claim(p_key);
  IF v_saved IS NOT NULL THEN RETURN v_saved; END IF;
  v_queued := release_pet_hold(p_now, p_id);
  v_pet := lock_pet_for_change(p_id, p_owner, p_if_match);
  IF (p_name IS NOT NULL AND p_name <> v_pet.name) OR (p_category IS NOT NULL AND p_category <> v_pet.category_id) OR (p_status IS NOT NULL AND p_status <> v_pet.status) THEN
    IF p_status IS NOT NULL AND p_status <> v_pet.status THEN
      v_order := holding_order(p_id);
      IF v_order.id IS NOT NULL THEN
        PERFORM refuse('pet_status_held_by_order', jsonb_build_object('orderId', v_order.id, 'status', v_order.status));
      END IF;
    END IF;
    UPDATE pets SET name = coalesce(p_name, name), category_id = coalesce(p_category, category_id), status = coalesce(p_status, status)
     WHERE id = p_id RETURNING * INTO v_pet;
    v_queued := v_queued + record_event('pet.updated', pet_object(v_pet), ARRAY[p_owner]);
  END IF;
  v_body := pet_object(v_pet);
  PERFORM idempotency_save(p_key, v_body, jsonb_build_object('etag', '"' || v_pet.version || '"'));
  RETURN jsonb_build_object('body', v_body, 'version', v_pet.version, 'queued', v_queued);
END $$;

-- deletePet: a pet without a placed order; its row stays for its orders.
CREATE FUNCTION delete_pet(p_id bigint, p_owner bigint, p_if_match text[], p_now timestamptz, p_key jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_saved jsonb;
  v_pet pets;
  v_order orders;
  v_queued integer := 0;
BEGIN
  v_saved := idempotency_claim(p_key);
  IF v_saved IS NOT NULL THEN RETURN v_saved; END IF;
  v_queued := release_pet_hold(p_now, p_id);
  v_pet := lock_pet_for_change(p_id, p_owner, p_if_match);
  v_order := holding_order(p_id);
  IF v_order.status = 'placed' THEN PERFORM refuse('pet_has_open_order', jsonb_build_object('orderId', v_order.id)); END IF;
  UPDATE pets SET deleted_at = now() WHERE id = p_id;
  v_queued := v_queued + record_event('pet.deleted', pet_object(v_pet), ARRAY[p_owner]);
  PERFORM idempotency_save(p_key, NULL);
  RETURN jsonb_build_object('body', NULL, 'queued', v_queued);
END $$;

-- An order change's events: the order's for its owner and its pet's creator, and pet.updated for
-- the creator, since every order change moves its pet.
CREATE FUNCTION record_order_change(p_type text, p_order orders, p_pet pets) RETURNS integer LANGUAGE sql AS $$
  SELECT record_event(p_type, order_object(p_order), ARRAY[p_order.account_id, p_pet.created_by])
       + record_event('pet.updated', pet_object(p_pet), ARRAY[p_pet.created_by])
$$;

-- placeOrder: the pet moves available -> pending and the order is placed, while the account holds
-- fewer than p_max placed orders whose hold has not ended. The account's row is locked first
-- (FOR NO KEY UPDATE: src/orders/sql.ts says why): one account's placements commit one at a time,
-- in id order, and the count, a statement after the lock, sees every placed order of the account.
-- Created at p_now; its hold ends p_hold seconds later, to the millisecond.
CREATE FUNCTION place_order(p_pet bigint, p_owner bigint, p_max bigint, p_hold double precision, p_now timestamptz, p_key jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_saved jsonb;
  v_order orders;
  v_pet pets;
  v_queued integer;
BEGIN
  v_saved := idempotency_claim(p_key);
  IF v_saved IS NOT NULL THEN RETURN v_saved; END IF;
  PERFORM FROM accounts WHERE id = p_owner FOR NO KEY UPDATE;
  v_queued := release_pet_hold(p_now, p_pet);
  UPDATE pets SET status = 'pending'
   WHERE id = p_pet AND status = 'available' AND deleted_at IS NULL
     AND (SELECT count(*) FROM orders WHERE account_id = p_owner AND status = 'placed' AND expires_at > p_now) < p_max
  RETURNING * INTO v_pet;
  IF NOT FOUND THEN
    -- Why: no such live pet, the pet's status, else the account's placed orders.
    SELECT * INTO v_pet FROM pets WHERE id = p_pet AND deleted_at IS NULL;
    IF NOT FOUND THEN PERFORM refuse('pet_not_found'); END IF;
    IF v_pet.status <> 'available' THEN PERFORM refuse('pet_not_available', jsonb_build_object('status', v_pet.status)); END IF;
    PERFORM refuse('too_many_open_orders');
  END IF;
  INSERT INTO orders (pet_id, account_id, created_at, updated_at, expires_at)
  VALUES (p_pet, p_owner, p_now, p_now, date_trunc('milliseconds', p_now + make_interval(secs => p_hold)))
  RETURNING * INTO v_order;
  v_queued := v_queued + record_order_change('order.placed', v_order, v_pet);
  PERFORM idempotency_save(p_key, order_object(v_order));
  RETURN jsonb_build_object('body', order_object(v_order), 'queued', v_queued);
END $$;

-- completeOrder ('completed': the pet pending -> sold) and cancelOrder ('cancelled': -> available):
-- a placed order of the account whose hold has not ended at p_now. Of a concurrent complete and
-- cancel (or expiry), the second waits on the order's row, then finds it no longer placed. Refused:
-- order_not_found, order_expired (expired, or placed past its hold and not yet swept),
-- invalid_order_transition.
CREATE FUNCTION transition_order(p_id bigint, p_owner bigint, p_now timestamptz, p_target text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_order orders;
  v_pet pets;
BEGIN
  UPDATE orders SET status = p_target, updated_at = p_now
   WHERE id = p_id AND account_id = p_owner AND status = 'placed' AND expires_at > p_now
  RETURNING * INTO v_order;
  IF NOT FOUND THEN
    SELECT * INTO v_order FROM orders WHERE id = p_id AND account_id = p_owner;
    IF NOT FOUND THEN PERFORM refuse('order_not_found'); END IF;
    IF v_order.status IN ('expired', 'placed') THEN PERFORM refuse('order_expired', jsonb_build_object('expiresAt', iso_timestamp(v_order.expires_at))); END IF;
    PERFORM refuse('invalid_order_transition', jsonb_build_object('status', v_order.status));
  END IF;
  UPDATE pets SET status = CASE p_target WHEN 'completed' THEN 'sold' ELSE 'available' END
   WHERE id = v_order.pet_id AND status = 'pending' RETURNING * INTO v_pet;
  IF NOT FOUND THEN RAISE EXCEPTION 'order % is placed but its pet % is not pending', p_id, v_order.pet_id; END IF;
  RETURN jsonb_build_object('body', order_object(v_order), 'queued', record_order_change('order.' || p_target, v_order, v_pet));
END $$;

-- The expiry sweep, one batch: placed orders whose hold ended at p_now, by their end, at most
-- p_batch. SKIP LOCKED passes over an order a complete, cancel or placement holds: if that commits,
-- the order is no longer placed; if it fails, the next batch or sweep takes it.
CREATE FUNCTION expire_due_orders(p_now timestamptz, p_batch integer, OUT expired integer, OUT queued integer) LANGUAGE sql AS $$
  SELECT * FROM expire_orders(ARRAY(
    SELECT id FROM orders WHERE status = 'placed' AND expires_at <= p_now ORDER BY expires_at LIMIT p_batch FOR UPDATE SKIP LOCKED))
$$;

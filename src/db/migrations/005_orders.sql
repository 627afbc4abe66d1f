-- Adoption orders. An order belongs to the API key that placed it; it moves
-- placed -> completed or placed -> cancelled, and its pet moves with it in the same
-- transaction (available -> pending -> sold, or back to available).
CREATE TABLE orders (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  api_key_id bigint NOT NULL REFERENCES api_keys (id),
  pet_id     bigint NOT NULL REFERENCES pets (id),
  status     text   NOT NULL DEFAULT 'placed' CHECK (status IN ('placed', 'completed', 'cancelled')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- One pet, one open order; and a pet is sold at most once.
CREATE UNIQUE INDEX orders_one_placed_per_pet ON orders (pet_id) WHERE status = 'placed';
CREATE UNIQUE INDEX orders_one_completed_per_pet ON orders (pet_id) WHERE status = 'completed';
-- A pet's orders, for the agreement check below (and the foreign key).
CREATE INDEX orders_pet_id_idx ON orders (pet_id);
-- Serve one owner's keyset pages ("WHERE api_key_id = $1 [AND status = $4] AND id > $2 ORDER BY id") without a sort.
CREATE INDEX orders_owner_id_idx ON orders (api_key_id, id);
CREATE INDEX orders_owner_status_id_idx ON orders (api_key_id, status, id);

-- Pets whose status disagrees with their orders: a pet with orders is pending while one is
-- placed, else sold once one is completed, else available; never placed and completed at
-- once. Pets without orders (created pending or sold) are outside the workflow.
CREATE VIEW pet_order_disagreements AS
  SELECT p.id AS pet_id, p.status AS pet_status, o.placed, o.completed
    FROM pets p
    JOIN (SELECT pet_id,
                 count(*) FILTER (WHERE status = 'placed') AS placed,
                 count(*) FILTER (WHERE status = 'completed') AS completed
            FROM orders GROUP BY pet_id) o ON o.pet_id = p.id
   WHERE p.status <> CASE WHEN o.placed > 0 THEN 'pending' WHEN o.completed > 0 THEN 'sold' ELSE 'available' END
      OR o.placed + o.completed > 1;

-- Checked at commit for every pet whose status or orders the transaction changed, so no
-- writer (the service, a script, a person with psql) can commit a disagreement.
CREATE FUNCTION check_pet_order_agreement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  touched bigint[];
BEGIN
  IF TG_TABLE_NAME = 'pets' THEN
    touched := ARRAY[NEW.id];
  ELSIF TG_OP = 'INSERT' THEN
    touched := ARRAY[NEW.pet_id];
  ELSIF TG_OP = 'DELETE' THEN
    touched := ARRAY[OLD.pet_id];
  ELSE
    touched := ARRAY[NEW.pet_id, OLD.pet_id];
  END IF;
  IF EXISTS (SELECT FROM pet_order_disagreements WHERE pet_id = ANY (touched)) THEN
    RAISE EXCEPTION 'pets % would disagree with their orders', touched USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER orders_agree_with_pets AFTER INSERT OR UPDATE OR DELETE ON orders
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_pet_order_agreement();
-- On status updates only: creating a pet (its status chosen freely) costs nothing more.
CREATE CONSTRAINT TRIGGER pets_agree_with_orders AFTER UPDATE OF status ON pets
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_pet_order_agreement();

-- The redelivery budget (REDELIVERIES_PER_HOUR series per account per hour, docs/WEBHOOKS.md) is
-- the account's, whatever it does to its endpoints. Migration 012 deleted an endpoint's series with
-- it (ON DELETE CASCADE), so an account that deleted and recreated its endpoints got a fresh
-- budget. Now a deleted endpoint's series stay, detached (endpoint_id NULL) and ended, and still
-- count for their hour (the budget counts by account_id and created_at only).
--
-- A detached series never blocks another: webhook_redeliveries_open_idx covers open series only,
-- and NULLs are distinct in it anyway; redeliverEvent's "open" test matches endpoint_id = w.id,
-- which NULL never does.
ALTER TABLE webhook_redeliveries
  ALTER COLUMN endpoint_id DROP NOT NULL,
  DROP CONSTRAINT webhook_redeliveries_endpoint_id_fkey,
  ADD CONSTRAINT webhook_redeliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id) ON DELETE SET NULL,
  -- A series without an endpoint has ended: nothing is left to deliver it to.
  ADD CONSTRAINT webhook_redeliveries_detached_ended CHECK (endpoint_id IS NOT NULL OR ended_at IS NOT NULL);

-- Ending a series whose endpoint is deleted: a trigger on the very row update that ON DELETE SET
-- NULL makes, rather than a BEFORE DELETE trigger on webhook_endpoints or a data-modifying CTE in
-- the repository's delete. It ends exactly the rows the foreign key detaches, in the same write
-- (no second scan, nothing a concurrent redeliverEvent can slip between), and whatever deletes the
-- endpoint: deleteWebhookEndpoint, psql, a script. An already ended series keeps its ended_at.
CREATE FUNCTION end_detached_redelivery() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.ended_at := coalesce(NEW.ended_at, now());
  RETURN NEW;
END
$$;
CREATE TRIGGER webhook_redeliveries_end_detached BEFORE UPDATE OF endpoint_id ON webhook_redeliveries
  FOR EACH ROW WHEN (NEW.endpoint_id IS NULL) EXECUTE FUNCTION end_detached_redelivery();

-- Deleting an endpoint finds its series by endpoint_id (the foreign key's action): without an
-- index each delete would scan every series ever started, which are kept.
CREATE INDEX webhook_redeliveries_endpoint_idx ON webhook_redeliveries (endpoint_id);

-- The webhook outbox (docs/WEBHOOKS.md, "From a change to a delivery"): one row per (event, subscribed enabled
-- endpoint), written by the change's own call (migration 018's record_event), a delivery intent that the
-- dispatcher (webhooks/outbox.ts) turns into a pg-boss job and deletes, in one transaction.
-- No foreign keys: an event may be deleted by retention and an endpoint by its account before the row is
-- dispatched, and a key would make those deletes wait on (or cascade into) the outbox; the delivery job
-- finds the event or endpoint gone and skips it, as it does for a job queued before they went.
CREATE TABLE webhook_outbox (
  id bigserial PRIMARY KEY,
  event_id bigint NOT NULL,
  endpoint_id bigint NOT NULL,
  account_id bigint NOT NULL
);

-- placeholder: the outbox branch brings this migration
CREATE TABLE webhook_outbox (
  id bigserial PRIMARY KEY,
  event_id bigint NOT NULL,
  endpoint_id bigint NOT NULL,
  account_id bigint NOT NULL
);

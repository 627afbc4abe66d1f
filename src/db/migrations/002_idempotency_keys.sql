-- Saved responses of createPet per (API key, Idempotency-Key). Written in the same
-- transaction as the pet, so neither can exist without the other.
CREATE TABLE idempotency_keys (
  api_key_id    bigint NOT NULL REFERENCES api_keys (id),
  key           text   NOT NULL,
  request_hash  text   NOT NULL,
  status        integer NOT NULL,
  response_body jsonb  NOT NULL,
  location      text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at);

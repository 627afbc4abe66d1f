-- Saved responses per (API key, operation, Idempotency-Key): the same key sent to createPet
-- and to placeOrder names two requests. Rows saved before this are createPet's (the only
-- operation that took a key then); the default keeps a writer that predates this working.
ALTER TABLE idempotency_keys ADD COLUMN operation text NOT NULL DEFAULT 'createPet';
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (api_key_id, operation, key);

-- Accounts own what their keys make (orders, Idempotency-Keys, pets) and hold the plan
-- whose quotas all their keys share. Each existing key becomes an account of its own, with
-- the key's id as the account's, so orders and saved responses move with it by renaming.
CREATE TABLE accounts (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text   NOT NULL DEFAULT '',
  plan       text   NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
  per_minute integer CHECK (per_minute > 0),
  per_day    integer CHECK (per_day > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Enterprise accounts carry their own limits; the others take their plan's.
  CHECK ((plan = 'enterprise') = (per_minute IS NOT NULL AND per_day IS NOT NULL))
);
INSERT INTO accounts (id, name, plan, per_minute, per_day, created_at) OVERRIDING SYSTEM VALUE
  SELECT id, name, plan, per_minute, per_day, created_at FROM api_keys;
SELECT setval(pg_get_serial_sequence('accounts', 'id'), coalesce(max(id), 0) + 1, false) FROM accounts;

ALTER TABLE api_keys ADD COLUMN account_id bigint REFERENCES accounts (id);
UPDATE api_keys SET account_id = id;
ALTER TABLE api_keys ALTER COLUMN account_id SET NOT NULL;
ALTER TABLE api_keys DROP COLUMN plan, DROP COLUMN per_minute, DROP COLUMN per_day;
-- Keys made before hold every scope there was; `as_` is all that can be shown of them.
ALTER TABLE api_keys
  ADD COLUMN scopes text[] NOT NULL DEFAULT '{pets:read,pets:write,orders:read,orders:write,account:manage}',
  ADD COLUMN prefix text NOT NULL DEFAULT 'as_',
  ADD COLUMN expires_at timestamptz;
ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT, ALTER COLUMN prefix DROP DEFAULT;
-- An account's keys in id order (listApiKeys), and its live ones (the last-key and 100-key rules).
CREATE INDEX api_keys_account_id_idx ON api_keys (account_id, id);

-- Which transaction last created or changed a key: each instance reads the keys changed by
-- transactions its last look could not see (src/auth/keyIndex.ts), so a bulk insert is read
-- once, not again for a minute as a timestamp overlap did.
ALTER TABLE api_keys ADD COLUMN changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX api_keys_changed_xid_idx ON api_keys (changed_xid);
DROP INDEX api_keys_changed_at_idx;
ALTER TABLE api_keys DROP COLUMN changed_at;

ALTER TABLE orders DROP CONSTRAINT orders_api_key_id_fkey;
ALTER TABLE orders RENAME COLUMN api_key_id TO account_id;
ALTER TABLE orders ADD FOREIGN KEY (account_id) REFERENCES accounts (id);
ALTER INDEX orders_owner_id_idx RENAME TO orders_account_id_idx;
ALTER INDEX orders_owner_status_id_idx RENAME TO orders_account_status_id_idx;

ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_api_key_id_fkey;
ALTER TABLE idempotency_keys RENAME COLUMN api_key_id TO account_id;
ALTER TABLE idempotency_keys ADD FOREIGN KEY (account_id) REFERENCES accounts (id);

-- Who created a pet (issue: only its creator changes it); pets from before accounts have none.
ALTER TABLE pets ADD COLUMN created_by bigint REFERENCES accounts (id);

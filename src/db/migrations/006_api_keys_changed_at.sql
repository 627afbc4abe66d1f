-- When a key was created or last changed (revoked): each instance reads the changes since its
-- last look to keep its index of issued keys current (src/auth/keyIndex.ts).
ALTER TABLE api_keys ADD COLUMN changed_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX api_keys_changed_at_idx ON api_keys (changed_at);

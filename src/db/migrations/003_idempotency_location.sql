-- Locations are built from the saved pet when a response is replayed, not stored.
ALTER TABLE idempotency_keys DROP COLUMN location;

-- Keyed creates go through the one Idempotency-Key mechanism every operation uses
-- (src/idempotency/idempotent.ts): claim, operation and saved response in one transaction.
DROP FUNCTION create_pet_keyed(bigint, text, text, text, text, bigint, text, bigint);

-- The path parameters a saved Idempotency-Key was first sent with (`{"petId": 12}`), so that a
-- reuse on another path is told apart from one with another body (the request hash covers both).
-- Null for operations without path parameters and for rows written before this.
ALTER TABLE idempotency_keys ADD COLUMN request_params jsonb;

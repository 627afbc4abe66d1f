-- The circuit breaker counts trips, not attempts (docs/WEBHOOKS.md, "Circuit breaker").
-- breaker_trips: trips since the endpoint last delivered (each pause doubles the one before, at most an hour);
-- while it is above 0 and the pause is over, the breaker is half-open: one probe at a time (probe_until, the
-- claim of the attempt under way), and only the probe's success closes it. breaker_generation changes at every
-- trip and close: an attempt counts toward the breaker only if none happened while it was in flight.
ALTER TABLE webhook_endpoints
  ADD COLUMN breaker_trips integer NOT NULL DEFAULT 0,
  ADD COLUMN breaker_generation integer NOT NULL DEFAULT 0,
  ADD COLUMN probe_until timestamptz;
-- An endpoint paused before this migration was paused by its first trip.
UPDATE webhook_endpoints SET breaker_trips = 1 WHERE paused_until IS NOT NULL;

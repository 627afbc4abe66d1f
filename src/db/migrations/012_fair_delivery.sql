-- Fair webhook delivery (docs/WEBHOOKS.md): a circuit breaker per endpoint, and bounded redelivery.

-- An endpoint whose deliveries time out WEBHOOK_BREAKER_TIMEOUTS times in a row is paused: its
-- deliveries are not taken until paused_until (doubling with each further timeout), so it holds no
-- worker meanwhile. Any answer, or any other failure, resets the count.
ALTER TABLE webhook_endpoints
  ADD COLUMN timeouts_in_a_row integer NOT NULL DEFAULT 0,
  ADD COLUMN paused_until timestamptz;
CREATE INDEX webhook_endpoints_paused_idx ON webhook_endpoints (paused_until) WHERE paused_until IS NOT NULL;

-- One row per redelivery series (redeliverEvent): at most one of an event to an endpoint is open at
-- a time (the unique index), and an account's series of the last hour count against its budget.
-- ended_at is set when the series ends: delivered, out of retries, or its endpoint gone or disabled.
CREATE TABLE webhook_redeliveries (
  series uuid PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts (id),
  event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  endpoint_id bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz
);
CREATE UNIQUE INDEX webhook_redeliveries_open_idx ON webhook_redeliveries (event_id, endpoint_id) WHERE ended_at IS NULL;
CREATE INDEX webhook_redeliveries_budget_idx ON webhook_redeliveries (account_id, created_at);

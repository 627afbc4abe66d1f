-- Events (written in the transaction of each change) and the webhook endpoints they are sent to.

-- One row per change. `xid` is the writing transaction's id: readers list only events whose
-- transaction is older than every transaction still running (pg_snapshot_xmin), so an event
-- committed late is never behind a page already read, and no writer waits on another.
CREATE TABLE events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  type text NOT NULL,
  object jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  xid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX events_created_at_idx ON events (created_at);

-- Who may read an event: pet events the pet's creator; order events the order's account and the
-- pet's creator (one row when they are the same account). Type and xid are copied so that each
-- account's pages are one index range scan, with or without the type filter.
CREATE TABLE event_recipients (
  account_id bigint NOT NULL REFERENCES accounts (id),
  event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  type text NOT NULL,
  xid xid8 NOT NULL,
  PRIMARY KEY (account_id, event_id)
);
CREATE INDEX event_recipients_page_idx ON event_recipients (account_id, xid, event_id);
CREATE INDEX event_recipients_type_page_idx ON event_recipients (account_id, type, xid, event_id);
CREATE INDEX event_recipients_event_idx ON event_recipients (event_id);

-- The secret signs deliveries, so it must be recoverable: stored encrypted with WEBHOOK_SECRET_KEY
-- (AES-256-GCM, src/webhooks/secrets.ts). During a rotation the previous one signs too, until
-- previous_secret_until.
CREATE TABLE webhook_endpoints (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id bigint NOT NULL REFERENCES accounts (id),
  url text NOT NULL,
  event_types text[] NOT NULL,
  description text NOT NULL DEFAULT '',
  secret text NOT NULL,
  previous_secret text,
  previous_secret_until timestamptz,
  status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason text,
  -- Since when every attempt has failed (null after a success): disables after WEBHOOK_DISABLE_AFTER_SECONDS.
  failing_since timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_account_idx ON webhook_endpoints (account_id, id);

-- The attempt log; no request or response bodies. `series` is one delivery (or redelivery) of
-- an event to an endpoint: (series, attempt) is unique so a job run twice records and
-- schedules its retry once.
CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id bigint NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  series uuid NOT NULL,
  attempt integer NOT NULL,
  response_status integer,
  duration_ms integer NOT NULL,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (series, attempt)
);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, id DESC);

-- Keys that manage their account also read its events and manage its webhooks (changed_xid:
-- running instances' key indexes read the new scopes).
UPDATE api_keys SET scopes = scopes || '{events:read,webhooks:manage}'::text[], changed_xid = pg_current_xact_id()
 WHERE 'account:manage' = ANY (scopes) AND NOT ('events:read' = ANY (scopes));

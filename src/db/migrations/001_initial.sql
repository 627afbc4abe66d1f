-- Animals. Identity ids are assigned in commit-independent order; keyset pagination on id.
CREATE TABLE pets (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  category_id bigint NOT NULL CHECK (category_id BETWEEN 1 AND 9007199254740991),
  status      text   NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'pending', 'sold')),
  created_at  timestamptz NOT NULL DEFAULT now()
);
-- Serves "WHERE status = $1 AND id > $2 ORDER BY id" pages without a sort.
CREATE INDEX pets_status_id_idx ON pets (status, id);

-- API keys, stored only as SHA-256 hashes of the key.
CREATE TABLE api_keys (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  key_hash     text   NOT NULL UNIQUE,
  name         text   NOT NULL DEFAULT '',
  plan         text   NOT NULL CHECK (plan IN ('free', 'pro', 'business', 'enterprise')),
  per_minute   integer CHECK (per_minute > 0),
  per_day      integer CHECK (per_day > 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz,
  -- Enterprise keys carry their own limits; the others take their plan's.
  CHECK ((plan = 'enterprise') = (per_minute IS NOT NULL AND per_day IS NOT NULL))
);

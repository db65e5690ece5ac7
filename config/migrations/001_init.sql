-- Pacer schema, version 1: campaigns, providers and the delivery ledger.
-- Applied by pacer's migration runner inside one transaction; the version is
-- recorded in pacer_schema_migrations.

CREATE TABLE providers (
  id          text PRIMARY KEY,
  rate        double precision CHECK (rate IS NULL OR rate >= 0),   -- messages/s; NULL = unlimited
  burst       double precision NOT NULL DEFAULT 1 CHECK (burst >= 1),
  sink        jsonb NOT NULL DEFAULT '{}'::jsonb,                     -- sink settings
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE campaigns (
  id          text PRIMARY KEY,
  name        text NOT NULL DEFAULT '',
  send_rate   double precision CHECK (send_rate IS NULL OR send_rate >= 0),  -- NULL = unlimited
  burst       double precision NOT NULL DEFAULT 1 CHECK (burst >= 1),
  weight      double precision NOT NULL DEFAULT 1 CHECK (weight > 0),
  provider    text REFERENCES providers (id),
  state       text NOT NULL DEFAULT 'active'
              CHECK (state IN ('active', 'paused', 'cancelled', 'completed')),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The ledger: one row per message outcome. message_id is the idempotency key.
CREATE TABLE deliveries (
  message_id       text PRIMARY KEY,
  campaign         text NOT NULL,
  topic            text NOT NULL,
  kafka_partition  integer NOT NULL,
  kafka_offset     bigint NOT NULL,
  status           text NOT NULL CHECK (status IN ('sent', 'failed', 'rejected')),
  attempts         integer NOT NULL DEFAULT 1 CHECK (attempts >= 0),
  reason           text NOT NULL DEFAULT '',
  recorded_at      timestamptz NOT NULL DEFAULT now()
);

-- Replay after a restart or rebalance looks up finished offsets by position.
CREATE INDEX deliveries_position ON deliveries (topic, kafka_partition, kafka_offset);

-- Pacer schema, version 7: dead push tokens.
-- A provider that says the recipient's token is dead (APNs 410 or
-- BadDeviceToken, FCM UNREGISTERED) makes a delivery row of its own status,
-- 'invalid_token', and one row per (provider, token) in invalid_tokens, which
-- the operator exports (`pacerctl tokens export`) to prune the audience.
--
-- The status check only widens: every row already there passes it, so it is
-- added NOT VALID (no scan of the ledger under the migration's lock).
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('sent', 'failed', 'rejected', 'invalid_token')) NOT VALID;

-- Written by pacerd in the transaction that records the delivery rows, so a
-- Kafka offset is committed only once its token is counted here too. A hit
-- is counted only with a new delivery row: a message replayed after a crash
-- counts nothing twice.
CREATE TABLE invalid_tokens (
  provider            text NOT NULL,         -- the campaign's provider id ('' for none)
  token               text NOT NULL,         -- the message's recipient
  first_seen          timestamptz NOT NULL,  -- when pacer first recorded it dead
  last_seen           timestamptz NOT NULL,  -- when pacer last recorded it dead
  reason              text NOT NULL DEFAULT '',  -- the last answer's reason
  provider_timestamp  timestamptz,           -- since when the provider says it is dead (APNs "timestamp"); NULL if unsaid
  campaign            text NOT NULL,         -- the first campaign that hit it
  hits                integer NOT NULL DEFAULT 1 CHECK (hits >= 1),  -- delivery rows that found it dead
  PRIMARY KEY (provider, token)
);

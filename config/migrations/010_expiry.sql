-- Pacer schema, version 10: message deadlines (docs/expiry.md).
--
-- A campaign may give its messages a default lifetime, in milliseconds from
-- when pacerd reads them (NULL: none); a message's own deadline, its
-- `pacer-expires-at` Kafka header, wins when it is earlier. The bounds are
-- those of pacer/validation.h (1 second to 30 days); NOT VALID as in
-- version 9.
ALTER TABLE campaigns ADD COLUMN default_ttl_ms bigint;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_default_ttl_range
  CHECK (default_ttl_ms IS NULL OR (default_ttl_ms >= 1000 AND default_ttl_ms <= 2592000000)) NOT VALID;

-- A message past its deadline is finished: nothing was sent, and its row's
-- reason names the deadline.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('sent', 'failed', 'rejected', 'invalid_token', 'suppressed', 'expired')) NOT VALID;

-- A parked message keeps its deadline, so it expires whenever it is claimed.
ALTER TABLE parked ADD COLUMN expires_at timestamptz;

-- Pacer schema, version 5: rates, bursts and weights within what pacerd can use.
-- A rate is above 0 (a campaign is stopped by pausing it) and at most
-- 10,000,000 per second; a burst is 1 to 10,000,000; a weight above 0 and at
-- most 1,000,000. NaN and Infinity pass none of these (PostgreSQL orders NaN
-- above every number). NOT VALID: rows already there are not checked here
-- (a bad one would stop the migration); pacerd skips such a row and names it
-- in its log (event=row_skipped) while the others load.
ALTER TABLE campaigns ADD CONSTRAINT campaigns_send_rate_range
  CHECK (send_rate IS NULL OR (send_rate > 0 AND send_rate <= 1e7)) NOT VALID;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_burst_range CHECK (burst >= 1 AND burst <= 1e7) NOT VALID;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_weight_range CHECK (weight > 0 AND weight <= 1e6) NOT VALID;
ALTER TABLE providers ADD CONSTRAINT providers_rate_range
  CHECK (rate IS NULL OR (rate > 0 AND rate <= 1e7)) NOT VALID;
ALTER TABLE providers ADD CONSTRAINT providers_burst_range CHECK (burst >= 1 AND burst <= 1e7) NOT VALID;

-- What each message said (a hash of campaign, recipient and payload), so that
-- a message id reused by a different message is told apart from a replay of
-- the same one. 0: not known (rows written before this version).
ALTER TABLE deliveries ADD COLUMN fingerprint bigint NOT NULL DEFAULT 0;

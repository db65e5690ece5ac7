-- Pacer schema, version 4: how many messages a campaign has in all, and the
-- index `pacerctl top` reads the ledger by.
-- `total` is what the operator (or `pacerctl produce`) says the campaign
-- holds; NULL means unknown. With it, the backlog is total minus the
-- campaign's ledger rows, the same for every worker; without it only the
-- parked messages are known, a lower bound.
-- The index lets top count one campaign's rows, and its rows of the last few
-- seconds, without reading the whole ledger; `status` is included so those
-- counts are index-only scans. It costs each ledger write one more index entry.
-- The build holds ledger writes for its duration (it runs inside the migration's
-- transaction): on a large ledger, migrate with the workers stopped (README).

ALTER TABLE campaigns ADD COLUMN total bigint CHECK (total IS NULL OR total >= 0);

CREATE INDEX deliveries_campaign_recorded ON deliveries (campaign, recorded_at) INCLUDE (status);

-- Pacer schema, version 9: the bounds of pacer/validation.h, which pacerctl,
-- the JSON API and pacerd all apply (docs/configuration.md, "Campaigns and
-- providers: the bounds of every value").
--
-- A rate is at least 0.001 per second (below it a token takes longer than a
-- quota key can live) and at most 10,000,000; ids are 1 to 256 bytes and
-- names at most 256 bytes, neither with control characters. NOT VALID, as in
-- version 5: rows already there are not checked here (a bad one would stop
-- the migration); pacerd skips such a row, names it once in its log
-- (event=row_skipped) and gives its messages a rejected ledger row with the
-- reason, while the others load.
ALTER TABLE campaigns DROP CONSTRAINT campaigns_send_rate_range;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_send_rate_range
  CHECK (send_rate IS NULL OR (send_rate >= 0.001 AND send_rate <= 1e7)) NOT VALID;
ALTER TABLE providers DROP CONSTRAINT providers_rate_range;
ALTER TABLE providers ADD CONSTRAINT providers_rate_range
  CHECK (rate IS NULL OR (rate >= 0.001 AND rate <= 1e7)) NOT VALID;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_id_text
  CHECK (octet_length(id) BETWEEN 1 AND 256 AND id !~ '[[:cntrl:]]') NOT VALID;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_name_text
  CHECK (octet_length(name) <= 256 AND name !~ '[[:cntrl:]]') NOT VALID;
ALTER TABLE providers ADD CONSTRAINT providers_id_text
  CHECK (octet_length(id) BETWEEN 1 AND 256 AND id !~ '[[:cntrl:]]') NOT VALID;

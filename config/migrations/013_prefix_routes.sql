-- Pacer schema, version 13: prefix routes (docs/routes.md).
--
-- An SMS campaign may send the numbers that start with a prefix (a country
-- code, or longer) through another provider: entries 'PREFIX=PROVIDER'
-- ('44=sms-uk'), the longest matching prefix wins, every other number goes
-- through the campaign's own provider. NULL or empty: none. pacerctl checks
-- the entries and that each provider exists; pacerd skips a row whose routes
-- it cannot follow (a malformed entry, a prefix twice, a provider of another
-- protocol family), naming it.
ALTER TABLE campaigns ADD COLUMN routes text[];
ALTER TABLE campaigns ADD CONSTRAINT campaigns_routes_length
  CHECK (routes IS NULL OR cardinality(routes) <= 32) NOT VALID;

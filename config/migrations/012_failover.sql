-- Pacer schema, version 12: failover (docs/routes.md).
--
-- A campaign may name the providers that take its traffic, in order, while
-- its own provider cannot (its circuit breaker is open, its SMPP binds
-- fail). NULL or empty: none. An array has no foreign key: pacerctl checks
-- that each provider exists, and pacerd skips a row whose list it cannot
-- follow (a provider of another protocol family, a duplicate), naming it.
ALTER TABLE campaigns ADD COLUMN failover text[];
ALTER TABLE campaigns ADD CONSTRAINT campaigns_failover_length
  CHECK (failover IS NULL OR cardinality(failover) <= 4) NOT VALID;

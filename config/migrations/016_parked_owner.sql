-- Pacer schema, version 16: find a worker's claimed parked rows by owner.
--
-- Every 20 s a worker renews the lease on the parked rows it has claimed
-- (UPDATE parked ... WHERE owner = $1), and releases them at a clean stop.
-- Without an index that was a scan of the whole table on the worker's loop:
-- 280-510 ms with a backlog of a million parked rows, during which nothing
-- was sent. Only claimed rows have an owner, a few thousand at most, so a
-- partial index stays small and costs nothing to the parking writes.
CREATE INDEX parked_owner ON parked (owner) WHERE owner IS NOT NULL;

-- Pacer schema, version 2: parking for the excess of slow campaigns.
-- A worker parks the messages a throttled campaign cannot send soon, so the
-- Kafka offsets behind them can be committed and a fast campaign sharing the
-- partition is not held back. A parked message leaves this table in the same
-- transaction that writes its row in deliveries. `owner` and `lease_until`
-- say which worker has claimed it back; a claim whose lease ran out (the
-- worker died) is free for any worker.

CREATE TABLE parked (
  seq              bigserial PRIMARY KEY,                -- claim order: oldest first
  message_id       text NOT NULL UNIQUE,
  campaign         text NOT NULL,
  topic            text NOT NULL,
  kafka_partition  integer NOT NULL,
  kafka_offset     bigint NOT NULL,
  recipient        text NOT NULL DEFAULT '',
  payload          bytea NOT NULL,
  owner            text,                                 -- NULL: not claimed
  lease_until      timestamptz,
  parked_at        timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX parked_campaign ON parked (campaign, seq);

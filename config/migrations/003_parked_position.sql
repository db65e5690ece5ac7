-- Pacer schema, version 3: find parked messages by their Kafka position.
-- On a partition assignment pacerd skips the records that already have an
-- outcome (deliveries) and those parked (they are sent from parking), with
-- one query per partition; this index serves the parked half.

CREATE INDEX parked_position ON parked (topic, kafka_partition, kafka_offset);

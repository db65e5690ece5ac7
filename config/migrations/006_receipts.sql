-- Pacer schema, version 6: delivery receipts (SMPP deliver_sm and the like).
-- A sent message keeps its provider and the provider's id for it; a receipt
-- is kept under (provider, provider_message_id) whether or not a delivery row
-- has that id (yet): it is matched by a join, so a receipt that arrives
-- before its row, or on another worker's bind, lands on the right row, and a
-- receipt for an id no row has is still there for the operator to see.
-- A receipt from a sink that serves no single provider has provider ''
-- and matches by the id alone.
ALTER TABLE deliveries ADD COLUMN provider text NOT NULL DEFAULT '';
ALTER TABLE deliveries ADD COLUMN provider_message_id text;
CREATE INDEX deliveries_provider_message_id ON deliveries (provider_message_id)
  WHERE provider_message_id IS NOT NULL;

CREATE TABLE receipts (
  provider             text NOT NULL,
  provider_message_id  text NOT NULL,
  status               text NOT NULL CHECK (status IN ('delivered', 'undelivered', 'expired', 'rejected', 'unknown')),
  error_code           text NOT NULL DEFAULT '',
  done_at              timestamptz,          -- when the provider says it finished; NULL if it did not say
  received_at          timestamptz NOT NULL, -- when it reached pacer
  text                 text NOT NULL DEFAULT '',
  PRIMARY KEY (provider, provider_message_id)
);
CREATE INDEX receipts_provider_message_id ON receipts (provider_message_id);

-- Each delivery with its receipt, if one came: what pacerctl and /metrics count.
CREATE VIEW delivery_receipts AS
  SELECT d.message_id, d.campaign, d.provider, d.provider_message_id, d.status AS send_status,
         r.status AS receipt_status, r.error_code, r.done_at, r.received_at
  FROM deliveries d
  LEFT JOIN LATERAL (
    SELECT * FROM receipts r
    WHERE r.provider_message_id = d.provider_message_id AND (r.provider = d.provider OR r.provider = '')
    ORDER BY r.received_at DESC LIMIT 1) r ON true;

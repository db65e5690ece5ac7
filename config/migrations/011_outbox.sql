-- Pacer schema, version 11: the outcome events' outbox.
-- With events on (events.topic), every ledger change (a new deliveries row,
-- a receipt that changed its row) also writes one outbox row in the same
-- statement, so an event exists exactly when the ledger change does. The
-- worker that wrote the rows publishes them to Kafka in id order and deletes
-- them once the broker has acknowledged them; what a crash leaves behind is
-- published by the same worker id when it starts again.
CREATE TABLE outbox (
  id                   bigserial PRIMARY KEY,   -- the event id consumers dedupe on
  worker               text NOT NULL,           -- events.worker_id of the writer; it publishes the row
  kind                 text NOT NULL CHECK (kind IN ('outcome', 'receipt')),
  message_id           text NOT NULL DEFAULT '',  -- '' for a receipt no delivery row has (yet)
  campaign             text NOT NULL DEFAULT '',
  -- A plain copy of deliveries.status or receipts.status: a new status
  -- needs no change here.
  status               text NOT NULL,
  reason               text NOT NULL DEFAULT '',
  provider             text NOT NULL DEFAULT '',
  provider_message_id  text NOT NULL DEFAULT '',
  attempts             integer NOT NULL DEFAULT 0,
  recorded_at          timestamptz NOT NULL,     -- when the ledger change was written
  done_at              timestamptz               -- receipts: when the provider says it finished
);
CREATE INDEX outbox_worker ON outbox (worker, id);

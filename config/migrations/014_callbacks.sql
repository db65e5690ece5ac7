-- Pacer schema, version 14: an HTTP callback per campaign (docs/callbacks.md).
--
-- campaigns.callback_url: where pacerd POSTs each outcome event of the
-- campaign (http or https; NULL: none). pacerctl checks it, pacerd skips a
-- row whose URL it cannot use, naming it, and the CHECK keeps out what has
-- no scheme at all.
ALTER TABLE campaigns ADD COLUMN callback_url text;
ALTER TABLE campaigns ADD CONSTRAINT campaigns_callback_url_scheme
  CHECK (callback_url IS NULL OR callback_url ~* '^https?://') NOT VALID;

-- The callbacks' outbox: one row per ledger change of a campaign that has a
-- callback URL when the change is written, in the ledger's own statement,
-- like the outcome events' outbox (011). With events on, a row carries the
-- id of its outbox row, so a consumer of both dedupes on one id; with
-- events off it takes the next id of the same sequence. The worker that
-- wrote it POSTs it and deletes it once the URL has answered 2xx (or it
-- gave up on it, counted and logged).
CREATE TABLE callback_outbox (
  id                   bigint PRIMARY KEY DEFAULT nextval('outbox_id_seq'),
  worker               text NOT NULL,
  kind                 text NOT NULL CHECK (kind IN ('outcome', 'receipt')),
  message_id           text NOT NULL DEFAULT '',
  campaign             text NOT NULL DEFAULT '',
  status               text NOT NULL,
  reason               text NOT NULL DEFAULT '',
  provider             text NOT NULL DEFAULT '',
  provider_message_id  text NOT NULL DEFAULT '',
  attempts             integer NOT NULL DEFAULT 0,
  recorded_at          timestamptz NOT NULL,
  done_at              timestamptz
);
CREATE INDEX callback_outbox_worker ON callback_outbox (worker, id);

-- Pacer schema, version 8: priority classes and recipient rules
-- (docs/recipient-rules.md).
--
-- A campaign names its priority class (NULL: pacerd's default class, see
-- `priority.classes`), its quiet hours in the recipient's local time
-- ('21:00-08:00'), the time zone of recipients whose message names none, a
-- per-recipient frequency cap ('3/24h') and what a capped message becomes
-- (suppress: a 'suppressed' ledger row; defer: it waits until allowed).
-- pacerd checks the text columns (a known class, a window it can parse, a
-- zone of the tz database) and skips a row that fails, naming it
-- (event=row_skipped); the checks here only keep out what no version could read.
ALTER TABLE campaigns ADD COLUMN priority_class text CHECK (priority_class IS NULL OR length(priority_class) BETWEEN 1 AND 64);
ALTER TABLE campaigns ADD COLUMN quiet_hours text CHECK (quiet_hours IS NULL OR length(quiet_hours) <= 32);
ALTER TABLE campaigns ADD COLUMN time_zone text CHECK (time_zone IS NULL OR length(time_zone) <= 64);
ALTER TABLE campaigns ADD COLUMN frequency_cap text CHECK (frequency_cap IS NULL OR length(frequency_cap) <= 32);
ALTER TABLE campaigns ADD COLUMN cap_policy text NOT NULL DEFAULT 'suppress' CHECK (cap_policy IN ('suppress', 'defer'));

-- A suppressed message is finished: its row says which cap refused it.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
  CHECK (status IN ('sent', 'failed', 'rejected', 'invalid_token', 'suppressed')) NOT VALID;

-- A parked message may wait for a time (the recipient's quiet hours end, a
-- deferred frequency cap allows it): no worker claims it before not_before.
ALTER TABLE parked ADD COLUMN not_before timestamptz;
-- The time zone the message named (its `tz` header), kept with it while parked.
ALTER TABLE parked ADD COLUMN time_zone text NOT NULL DEFAULT '';

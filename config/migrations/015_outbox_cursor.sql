-- Pacer schema, version 15: the outbox drained by a cursor instead of a
-- delete per row.
--
-- outbox_cursor holds, per events.worker_id, the highest outbox id up to
-- which the broker has acknowledged every row of that worker; the drainer
-- updates it once per batch and deletes the rows at or below it in bulk now
-- and then. A row above the cursor is not yet published (or published but
-- not yet covered: what a crash publishes again). Rows of a database
-- upgraded from version 14 are all unpublished (the old drainer deleted
-- what it published), so no cursor row means 0.
CREATE TABLE outbox_cursor (
  worker           text PRIMARY KEY,
  published_up_to  bigint NOT NULL DEFAULT 0,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The drainer reads and deletes by (worker, id) only (index outbox_worker);
-- the primary key was a second index maintained on every ledger insert. The
-- ids stay unique: they all come from outbox_id_seq.
ALTER TABLE outbox DROP CONSTRAINT outbox_pkey;

-- A focus row's update is announced on brain_focus_changed only when some
-- replica may remember the project's focus (it marked the rows watched,
-- brain_focus_watch, before the read it remembers). A transaction that
-- NOTIFYs holds a lock of the whole database cluster from its commit's
-- start through its WAL flush, so every end, of any tenant, announcing its
-- body committed one at a time (pgbench on brain's pair: 10-50 % more pairs
-- a second without it). Inserts, deletes and an update that moves a row to
-- another project are still always announced.
--
-- Rows there before this migration count as watched: a replica of the
-- build before remembers reads without marking them, and keeps hearing
-- their changes while the replicas roll. Rows added from now on start
-- unwatched (docs/deploy.md, on rolling across 0029).
--
-- The functions that go with it (0030): brain_focus_watch marks the rows,
-- and brain_end no longer NOTIFYs `brain_focus` for resource subscribers:
-- brain announces an applied end after its commit, in a NOTIFY of its own
-- that waits for no WAL flush.
ALTER TABLE focus_bodies ADD COLUMN watched boolean NOT NULL DEFAULT true;
ALTER TABLE focus_bodies ALTER COLUMN watched SET DEFAULT false;
DROP TRIGGER focus_bodies_changed ON focus_bodies;
CREATE TRIGGER focus_bodies_changed
    AFTER UPDATE ON focus_bodies
    FOR EACH ROW WHEN ((OLD.watched AND OLD.* IS DISTINCT FROM NEW.*)
        OR (OLD.tenant_id, OLD.project) IS DISTINCT FROM (NEW.tenant_id, NEW.project))
    EXECUTE FUNCTION brain_focus_changed();


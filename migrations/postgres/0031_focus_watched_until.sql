-- A focus row is watched (its updates announced to the replicas' focus
-- memory) until a time, not forever: `watched_until` replaces 0029's
-- `watched`. A replica marks a project's rows for a while before a read it
-- remembers (brain_focus_watch, 0032) and lets go of the memory before that
-- while is over; a project nobody reads any more stops being announced, and
-- its ends stop taking the NOTIFY lock of the whole cluster (0029). Since
-- 0029, a project read once was announced on every end for good.
--
-- Rows there now, watched or not, count as watched for an hour: replicas of
-- the build before keep what they read until they hear a change, so a roll
-- across this migration is to finish within the hour (docs/deploy.md). The
-- default is evaluated once, here, and kept in the catalog: the table is not
-- rewritten. The exclusive lock the ALTERs take waits for every transaction
-- that has touched the table, reads too, and holds up all that come after,
-- for a moment.
ALTER TABLE focus_bodies ADD COLUMN watched_until timestamptz
    DEFAULT now() + interval '1 hour';
ALTER TABLE focus_bodies ALTER COLUMN watched_until DROP DEFAULT;
DROP TRIGGER focus_bodies_changed ON focus_bodies;
ALTER TABLE focus_bodies DROP COLUMN watched;
-- An update is announced when its row was watched a minute before the
-- updating transaction's start (now(): earlier than its commit, so it errs
-- toward announcing; the minute is room for the database's clock to step
-- forward, or a replica to count less time than passed) and changed what a
-- read answers; a mark alone (watched_until) changes nothing a replica
-- remembers. A row moved to another project or slot is always announced.
CREATE TRIGGER focus_bodies_changed
    AFTER UPDATE ON focus_bodies
    FOR EACH ROW WHEN ((OLD.watched_until >= now() - interval '1 minute'
            AND (OLD.body, OLD.revision, OLD.updated_at, OLD.updated_by_session)
                IS DISTINCT FROM (NEW.body, NEW.revision, NEW.updated_at, NEW.updated_by_session))
        OR (OLD.tenant_id, OLD.project, OLD.slot) IS DISTINCT FROM (NEW.tenant_id, NEW.project, NEW.slot))
    EXECUTE FUNCTION brain_focus_changed();

-- Replicas of the build before call the two-argument mark while this
-- migration's functions (0032) are not yet in: it marks an hour here too.
-- The lock is a statement of its own (a row updated since the statement's
-- snapshot is locked at its newest version, which only a later statement
-- sees), and every row locked must be marked.
CREATE OR REPLACE FUNCTION brain_focus_watch(p_tenant text, p_project text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    locked tid[];
    marked bigint;
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    locked := ARRAY(
        SELECT d.ctid FROM focus_bodies d
         WHERE d.tenant_id = p_tenant AND d.project = p_project
           AND (d.watched_until IS NULL OR d.watched_until < now() + interval '30 minutes')
           FOR NO KEY UPDATE NOWAIT);
    UPDATE focus_bodies f SET watched_until = now() + interval '1 hour'
     WHERE f.ctid = ANY (locked);
    GET DIAGNOSTICS marked = ROW_COUNT;
    RETURN marked = cardinality(locked);
EXCEPTION WHEN lock_not_available THEN
    RETURN false;
END
$$;

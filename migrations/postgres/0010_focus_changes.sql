-- Every change to a project's focus rows is announced on the channel
-- brain_focus_changed, in the changing transaction, so each replica's memory
-- of focus reads (brain_core::focus_cache) forgets the project when the
-- change commits, whichever statement, function or replica made it. NOTIFY
-- is delivered only on commit and in commit order, and identical payloads of
-- one transaction are sent once. The payload is the JSON array
-- [tenant_id, project].
CREATE FUNCTION brain_focus_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r focus_bodies;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    PERFORM pg_notify('brain_focus_changed', json_build_array(r.tenant_id, r.project)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER focus_bodies_added_or_removed
    AFTER INSERT OR DELETE ON focus_bodies
    FOR EACH ROW EXECUTE FUNCTION brain_focus_changed();

-- An update that leaves every column as it was (a lock taken with a no-op
-- update, say) changes no answer.
CREATE TRIGGER focus_bodies_changed
    AFTER UPDATE ON focus_bodies
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
    EXECUTE FUNCTION brain_focus_changed();

-- TRUNCATE fires no row trigger: announce it to every replica as a change of
-- everything (an empty array).
CREATE FUNCTION brain_focus_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('brain_focus_changed', '[]');
    RETURN NULL;
END
$$;

CREATE TRIGGER focus_bodies_truncated
    AFTER TRUNCATE ON focus_bodies
    FOR EACH STATEMENT EXECUTE FUNCTION brain_focus_truncated();

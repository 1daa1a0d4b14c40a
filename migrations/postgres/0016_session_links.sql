-- What an agent needs to pick a session back up (issue 38):
--   read_revision: the revision of the focus its end writes (its slot's if
--     bound, else the base's) as the session last read it, at start, bind or
--     as a relay's receiver. NULL only on a session bound before this
--     migration (an unbound one read started_focus_revision).
--   relayed_from: the session whose relay opened this one. Its reverse
--     (relayed_to) is read from the relaying session's stored close result.
ALTER TABLE sessions ADD COLUMN read_revision bigint, ADD COLUMN relayed_from uuid;

-- The statements that open a session from Rust (relay's receiver, bind) pass
-- read_revision. A start opens its session inside one statement of
-- lifecycle.rs or inside brain_start (migration 0013), which do not name the
-- column: this trigger reads it there, from the row the start's answer shows.
-- STABLE, so its query sees the inserting statement's snapshot, which is the
-- one that statement's answer is read from; a slot the same statement
-- created is not in it and reads as revision 0, which it is.
CREATE FUNCTION brain_session_read_revision() RETURNS trigger
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NEW.bound_slot IS NULL THEN
        NEW.read_revision := NEW.started_focus_revision;
    ELSE
        NEW.read_revision := COALESCE((SELECT f.revision FROM focus_bodies f
            WHERE f.tenant_id = NEW.tenant_id AND f.project = NEW.project
              AND f.slot = NEW.bound_slot), 0);
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER sessions_read_revision BEFORE INSERT ON sessions
    FOR EACH ROW WHEN (NEW.read_revision IS NULL AND NEW.status = 'open')
    EXECUTE FUNCTION brain_session_read_revision();

-- The lock functions of 0011 and 0012 return the session's columns by name:
-- the same functions with the two new ones.
DROP FUNCTION brain_lock_close(text, uuid);
CREATE FUNCTION brain_lock_close(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb,
    body text, revision bigint, updated_at timestamptz, updated_by_session uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.read_revision, s.relayed_from, s.status,
               s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, s.next_focus, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result,
               f.body, f.revision, f.updated_at, f.updated_by_session
          FROM sessions s JOIN focus_bodies f ON f.tenant_id = s.tenant_id
               AND f.project = s.project AND f.slot = COALESCE(s.bound_slot, '')
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session
           FOR UPDATE OF s, f;
END
$$;

DROP FUNCTION brain_lock_session(text, uuid);
CREATE FUNCTION brain_lock_session(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.read_revision, s.relayed_from, s.status,
               s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, s.next_focus, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result
          FROM sessions s
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session
           FOR UPDATE;
END
$$;

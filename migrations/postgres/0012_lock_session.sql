-- The first statement of the other writes that lock a session (abandon, bind,
-- resume, a remember in a session), sent with their BEGIN the same way: the
-- session, locked, as sql.rs's session_lock selects it.
CREATE FUNCTION brain_lock_session(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, status text, opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.status, s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, s.next_focus, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result
          FROM sessions s
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session
           FOR UPDATE;
END
$$;

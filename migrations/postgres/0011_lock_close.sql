-- A close's first statement as a function (issue 11): the session and its
-- target body, locked (brain-store-postgres's tx.rs lock_close calls it with
-- parameters when its transaction has begun already). A function call whose arguments are a tenant id
-- (held to [A-Za-z0-9._/-]) and a UUID can be written as a simple query, so
-- brain sends it in the same message as the transaction's BEGIN and tenant
-- scope: one round trip fewer per close. PL/pgSQL keeps the plan of the
-- query inside, which a simple query alone would plan every time. The caller
-- has set brain.tenant (row-level security applies as to the query it
-- replaces). No row when the session is missing or is not joined to its
-- target body (tx.rs then loads the two apart).
CREATE FUNCTION brain_lock_close(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, status text, opened_at timestamptz,
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
               s.started_focus_revision, s.status, s.opened_at, s.last_activity_at,
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

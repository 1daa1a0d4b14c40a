-- brain_focus_get's read in one round trip. Row-level security needs the
-- tenant set in the reading transaction (set_config(.., true)); from the
-- client that was BEGIN + the query + COMMIT, three round trips for one read.
-- This function sets it and runs the query inside the one statement's own
-- transaction. SECURITY INVOKER (the default): the policies of the calling
-- role apply, and the query filters on the tenant as well.
CREATE FUNCTION brain_focus_with_slots(p_tenant text, p_project text)
RETURNS TABLE (slot text, body text, revision bigint, updated_at timestamptz, updated_by_session uuid)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    RETURN QUERY
        SELECT f.slot, CASE WHEN f.slot = '' THEN f.body ELSE '' END, f.revision, f.updated_at,
               f.updated_by_session
        FROM focus_bodies f WHERE f.tenant_id = p_tenant AND f.project = p_project
        ORDER BY f.slot LIMIT 201;
END
$$;

-- Row-level security, the second tenant wall (SPEC §6). Every query already
-- says WHERE tenant_id = …; these policies make a query that forgets it see
-- (and write) only the tenant its transaction is scoped to.
--
-- A tenant-scoped transaction sets brain.tenant with set_config(…, true) (see
-- PgStore::scoped). System work that spans tenants by design (metrics gauges,
-- the shared-token lookup, the connection expiry sweep, the daily-brief
-- scheduler) sets brain.scope = 'system' instead (PgStore::system). A
-- connection that sets neither sees no rows at all.
--
-- FORCE applies the policies to the tables' owner too, so brain may run
-- migrations and serve as one role; that role must not be a superuser and must
-- not have BYPASSRLS (both skip every policy). README "Security" shows how to
-- create it.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenants', 'projects', 'focus_bodies', 'focus_history',
        'sessions', 'artifacts', 'receipts', 'receipt_heads', 'mcp_connections',
        'elevations', 'shared_tokens', 'documents', 'daily_briefs']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_wall ON %I '
            'USING (tenant_id = current_setting(''brain.tenant'', true) '
            '       OR current_setting(''brain.scope'', true) = ''system'') '
            'WITH CHECK (tenant_id = current_setting(''brain.tenant'', true) '
            '       OR current_setting(''brain.scope'', true) = ''system'')', t);
    END LOOP;
END
$$;

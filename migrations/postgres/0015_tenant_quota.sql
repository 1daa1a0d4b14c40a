-- The bytes of bodies and texts each tenant holds, counted as writes commit
-- (never by scanning), and the quota they are held to (BRAIN_TENANT_QUOTA_BYTES,
-- written by `brain serve` at start; 0 = unlimited).
--
-- What counts: artifacts' text, tags and acknowledgement notes; every focus
-- revision's body (focus_history: the current body is its newest row); documents'
-- names and bodies; sessions' summaries, next focus and reasons; daily briefs.
-- Receipts (digests, fixed size), connections and the current-body copy do not.
--
-- What is refused: a new artifact, a new focus revision, and a document that
-- grows, when the tenant's usage would pass the quota. Whatever shrinks usage,
-- and sessions' own texts (so an end without a body change, an abandon, an
-- acknowledgement always work), is counted and never refused: a tenant over
-- its quota can always clean up. The usage row is updated under its row lock
-- in the write's transaction, so concurrent writers never overshoot.
CREATE TABLE brain_limits (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO brain_limits (name, value) VALUES ('tenant_quota_bytes', 1073741824);

CREATE TABLE tenant_usage (
    tenant_id text PRIMARY KEY,
    bytes     bigint NOT NULL DEFAULT 0
);
ALTER TABLE tenant_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_usage FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_wall ON tenant_usage
    USING (tenant_id = current_setting('brain.tenant', true)
           OR current_setting('brain.scope', true) = 'system')
    WITH CHECK (tenant_id = current_setting('brain.tenant', true)
           OR current_setting('brain.scope', true) = 'system');

CREATE FUNCTION brain_use(t text, n bigint, refusable boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    used bigint;
    quota bigint;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    INSERT INTO tenant_usage AS u (tenant_id, bytes) VALUES (t, n)
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = u.bytes + n
        RETURNING u.bytes INTO used;
    IF refusable AND n > 0 THEN
        SELECT value INTO quota FROM brain_limits WHERE name = 'tenant_quota_bytes';
        IF quota > 0 AND used > quota THEN
            RAISE EXCEPTION 'brain_quota_exceeded: usage=% quota=% write=%', used - n, quota, n
                USING ERRCODE = '53400';
        END IF;
    END IF;
END $$;

CREATE FUNCTION brain_usage_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.text) + coalesce(octet_length(array_to_string(OLD.tags, '')), 0)
            + coalesce(octet_length(OLD.ack_note), 0);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.text) + coalesce(octet_length(array_to_string(NEW.tags, '')), 0)
            + coalesce(octet_length(NEW.ack_note), 0);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, TG_OP = 'INSERT');
    RETURN NULL;
END $$;
CREATE TRIGGER artifacts_usage AFTER INSERT OR DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION brain_usage_artifacts();
CREATE TRIGGER artifacts_usage_update AFTER UPDATE ON artifacts
    FOR EACH ROW WHEN (OLD.ack_note IS DISTINCT FROM NEW.ack_note OR OLD.text <> NEW.text
        OR OLD.tags <> NEW.tags)
    EXECUTE FUNCTION brain_usage_artifacts();

CREATE FUNCTION brain_usage_focus() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM brain_use(NEW.tenant_id, octet_length(NEW.body), true);
    ELSE
        PERFORM brain_use(OLD.tenant_id, -octet_length(OLD.body), false);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER focus_history_usage AFTER INSERT OR DELETE ON focus_history
    FOR EACH ROW EXECUTE FUNCTION brain_usage_focus();

CREATE FUNCTION brain_usage_documents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.name) + octet_length(OLD.body);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.name) + octet_length(NEW.body);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, true);
    RETURN NULL;
END $$;
CREATE TRIGGER documents_usage AFTER INSERT OR DELETE ON documents
    FOR EACH ROW EXECUTE FUNCTION brain_usage_documents();
CREATE TRIGGER documents_usage_update AFTER UPDATE ON documents
    FOR EACH ROW WHEN (OLD.body <> NEW.body OR OLD.name <> NEW.name)
    EXECUTE FUNCTION brain_usage_documents();

CREATE FUNCTION brain_usage_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := coalesce(octet_length(OLD.summary), 0) + coalesce(octet_length(OLD.next_focus), 0)
            + coalesce(octet_length(OLD.nothing_to_capture_reason), 0)
            + coalesce(octet_length(OLD.abandon_reason), 0);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := coalesce(octet_length(NEW.summary), 0) + coalesce(octet_length(NEW.next_focus), 0)
            + coalesce(octet_length(NEW.nothing_to_capture_reason), 0)
            + coalesce(octet_length(NEW.abandon_reason), 0);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, false);
    RETURN NULL;
END $$;
-- A session's every touch updates its row: only a change of its texts counts.
CREATE TRIGGER sessions_usage_insert AFTER INSERT ON sessions
    FOR EACH ROW WHEN (NEW.summary IS NOT NULL OR NEW.next_focus IS NOT NULL
        OR NEW.nothing_to_capture_reason IS NOT NULL OR NEW.abandon_reason IS NOT NULL)
    EXECUTE FUNCTION brain_usage_sessions();
CREATE TRIGGER sessions_usage_update AFTER UPDATE ON sessions
    FOR EACH ROW WHEN (OLD.summary IS DISTINCT FROM NEW.summary
        OR OLD.next_focus IS DISTINCT FROM NEW.next_focus
        OR OLD.nothing_to_capture_reason IS DISTINCT FROM NEW.nothing_to_capture_reason
        OR OLD.abandon_reason IS DISTINCT FROM NEW.abandon_reason)
    EXECUTE FUNCTION brain_usage_sessions();
CREATE TRIGGER sessions_usage_delete AFTER DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION brain_usage_sessions();

CREATE FUNCTION brain_usage_briefs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.body);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.body);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, false);
    RETURN NULL;
END $$;
CREATE TRIGGER daily_briefs_usage AFTER INSERT OR UPDATE OR DELETE ON daily_briefs
    FOR EACH ROW EXECUTE FUNCTION brain_usage_briefs();

-- What a database written before this migration already holds, counted once
-- (across tenants: row-level security binds the role migrations run as).
SELECT set_config('brain.scope', 'system', true);
INSERT INTO tenant_usage (tenant_id, bytes)
SELECT tenant_id, sum(n) FROM (
    SELECT tenant_id, octet_length(text) + coalesce(octet_length(array_to_string(tags, '')), 0)
        + coalesce(octet_length(ack_note), 0) AS n FROM artifacts
    UNION ALL SELECT tenant_id, octet_length(body) FROM focus_history
    UNION ALL SELECT tenant_id, octet_length(name) + octet_length(body) FROM documents
    UNION ALL SELECT tenant_id, coalesce(octet_length(summary), 0) + coalesce(octet_length(next_focus), 0)
        + coalesce(octet_length(nothing_to_capture_reason), 0) + coalesce(octet_length(abandon_reason), 0)
        FROM sessions
    UNION ALL SELECT tenant_id, octet_length(body) FROM daily_briefs
) AS held GROUP BY tenant_id;

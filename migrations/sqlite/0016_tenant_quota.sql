-- SQLite dialect of migrations/postgres/0015_tenant_quota.sql: the bytes of
-- bodies and texts each tenant holds, counted as writes commit, and the quota
-- (BRAIN_TENANT_QUOTA_BYTES, written by `brain serve`; 0 = unlimited). New
-- artifacts, new focus revisions and growing documents are refused past it;
-- what shrinks usage and sessions' own texts are counted, never refused.
-- SQLite's one writer makes the check exact. RAISE takes only a literal here,
-- so the server reads the usage and quota for the refusal's details.
CREATE TABLE brain_limits (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO brain_limits (name, value) VALUES ('tenant_quota_bytes', 1073741824);

CREATE TABLE tenant_usage (
    tenant_id TEXT PRIMARY KEY,
    bytes     INTEGER NOT NULL DEFAULT 0
);

CREATE TRIGGER artifacts_usage_insert AFTER INSERT ON artifacts
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, length(CAST(NEW.text AS BLOB)) + (SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM json_each(NEW.tags)) + coalesce(length(CAST(NEW.ack_note AS BLOB)), 0))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE 1
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

CREATE TRIGGER artifacts_usage_update AFTER UPDATE ON artifacts
WHEN OLD.ack_note IS NOT NEW.ack_note OR OLD.text <> NEW.text OR OLD.tags <> NEW.tags
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, (length(CAST(NEW.text AS BLOB)) + (SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM json_each(NEW.tags)) + coalesce(length(CAST(NEW.ack_note AS BLOB)), 0)) - (length(CAST(OLD.text AS BLOB)) + (SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM json_each(OLD.tags)) + coalesce(length(CAST(OLD.ack_note AS BLOB)), 0)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER artifacts_usage_delete AFTER DELETE ON artifacts
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (OLD.tenant_id, -(length(CAST(OLD.text AS BLOB)) + (SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM json_each(OLD.tags)) + coalesce(length(CAST(OLD.ack_note AS BLOB)), 0)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER focus_history_usage_insert AFTER INSERT ON focus_history
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, length(CAST(NEW.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE 1
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

CREATE TRIGGER focus_history_usage_delete AFTER DELETE ON focus_history
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (OLD.tenant_id, -length(CAST(OLD.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER documents_usage_insert AFTER INSERT ON documents
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, length(CAST(NEW.name AS BLOB)) + length(CAST(NEW.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE 1
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

CREATE TRIGGER documents_usage_update AFTER UPDATE ON documents
WHEN OLD.body <> NEW.body OR OLD.name <> NEW.name
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, (length(CAST(NEW.name AS BLOB)) + length(CAST(NEW.body AS BLOB))) - (length(CAST(OLD.name AS BLOB)) + length(CAST(OLD.body AS BLOB))))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE (length(CAST(NEW.name AS BLOB)) + length(CAST(NEW.body AS BLOB))) > (length(CAST(OLD.name AS BLOB)) + length(CAST(OLD.body AS BLOB)))
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

CREATE TRIGGER documents_usage_delete AFTER DELETE ON documents
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (OLD.tenant_id, -(length(CAST(OLD.name AS BLOB)) + length(CAST(OLD.body AS BLOB))))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

-- A session's every touch updates its row: only a change of its texts counts.

CREATE TRIGGER sessions_usage_insert AFTER INSERT ON sessions
WHEN NEW.summary IS NOT NULL OR NEW.next_focus IS NOT NULL OR NEW.nothing_to_capture_reason IS NOT NULL OR NEW.abandon_reason IS NOT NULL
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER sessions_usage_update AFTER UPDATE ON sessions
WHEN OLD.summary IS NOT NEW.summary OR OLD.next_focus IS NOT NEW.next_focus OR OLD.nothing_to_capture_reason IS NOT NEW.nothing_to_capture_reason OR OLD.abandon_reason IS NOT NEW.abandon_reason
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, (coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0)) - (coalesce(length(CAST(OLD.summary AS BLOB)), 0) + coalesce(length(CAST(OLD.next_focus AS BLOB)), 0) + coalesce(length(CAST(OLD.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(OLD.abandon_reason AS BLOB)), 0)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER sessions_usage_delete AFTER DELETE ON sessions
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (OLD.tenant_id, -(coalesce(length(CAST(OLD.summary AS BLOB)), 0) + coalesce(length(CAST(OLD.next_focus AS BLOB)), 0) + coalesce(length(CAST(OLD.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(OLD.abandon_reason AS BLOB)), 0)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER daily_briefs_usage_insert AFTER INSERT ON daily_briefs
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, length(CAST(NEW.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER daily_briefs_usage_update AFTER UPDATE ON daily_briefs
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, length(CAST(NEW.body AS BLOB)) - length(CAST(OLD.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

CREATE TRIGGER daily_briefs_usage_delete AFTER DELETE ON daily_briefs
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (OLD.tenant_id, -length(CAST(OLD.body AS BLOB)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
END;

-- What a database written before this migration already holds, counted once.
INSERT INTO tenant_usage (tenant_id, bytes)
SELECT tenant_id, sum(n) FROM (
    SELECT tenant_id, length(CAST(text AS BLOB)) + (SELECT coalesce(sum(length(CAST(value AS BLOB))), 0) FROM json_each(tags)) + coalesce(length(CAST(ack_note AS BLOB)), 0) AS n FROM artifacts
    UNION ALL SELECT tenant_id, length(CAST(body AS BLOB)) FROM focus_history
    UNION ALL SELECT tenant_id, length(CAST(name AS BLOB)) + length(CAST(body AS BLOB)) FROM documents
    UNION ALL SELECT tenant_id, coalesce(length(CAST(summary AS BLOB)), 0) + coalesce(length(CAST(next_focus AS BLOB)), 0) + coalesce(length(CAST(nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(abandon_reason AS BLOB)), 0) FROM sessions
    UNION ALL SELECT tenant_id, length(CAST(body AS BLOB)) FROM daily_briefs
) GROUP BY tenant_id;

-- SQLite dialect of migration 0041's brain_usage_sessions (PostgreSQL): past
-- the tenant's quota a close still closes (an end that leaves the focus as it
-- is, an abandon), but only if it stores no next_focus text of its own (an
-- unchanged end names the body's revision instead:
-- brain_core::flow::StoredNextFocus) and at most 1 KiB of summary and reasons
-- together. A close that stores more is refused like a new body, so a tenant
-- past its quota cannot grow by a body per start and end. Below the quota
-- every close is counted and stored as it comes. The counting is 0016's.
DROP TRIGGER sessions_usage_insert;
DROP TRIGGER sessions_usage_update;

CREATE TRIGGER sessions_usage_insert AFTER INSERT ON sessions
WHEN NEW.summary IS NOT NULL OR NEW.next_focus IS NOT NULL OR NEW.nothing_to_capture_reason IS NOT NULL OR NEW.abandon_reason IS NOT NULL
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE
           (coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) > 0
            OR coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0) > 1024)
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

CREATE TRIGGER sessions_usage_update AFTER UPDATE ON sessions
WHEN OLD.summary IS NOT NEW.summary OR OLD.next_focus IS NOT NEW.next_focus OR OLD.nothing_to_capture_reason IS NOT NEW.nothing_to_capture_reason OR OLD.abandon_reason IS NOT NEW.abandon_reason
BEGIN
    INSERT INTO tenant_usage (tenant_id, bytes) VALUES (NEW.tenant_id, (coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0)) - (coalesce(length(CAST(OLD.summary AS BLOB)), 0) + coalesce(length(CAST(OLD.next_focus AS BLOB)), 0) + coalesce(length(CAST(OLD.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(OLD.abandon_reason AS BLOB)), 0)))
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = bytes + excluded.bytes;
    SELECT RAISE(ABORT, 'brain_quota_exceeded') WHERE
           (coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) > coalesce(length(CAST(OLD.next_focus AS BLOB)), 0)
            OR coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0) > 1024)
       AND (coalesce(length(CAST(NEW.summary AS BLOB)), 0) + coalesce(length(CAST(NEW.next_focus AS BLOB)), 0) + coalesce(length(CAST(NEW.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.abandon_reason AS BLOB)), 0)) > (coalesce(length(CAST(OLD.summary AS BLOB)), 0) + coalesce(length(CAST(OLD.next_focus AS BLOB)), 0) + coalesce(length(CAST(OLD.nothing_to_capture_reason AS BLOB)), 0) + coalesce(length(CAST(OLD.abandon_reason AS BLOB)), 0))
       AND (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes') > 0
       AND (SELECT bytes FROM tenant_usage WHERE tenant_id = NEW.tenant_id)
           > (SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes');
END;

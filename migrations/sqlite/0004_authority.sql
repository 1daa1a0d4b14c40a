-- SQLite dialect of migrations/postgres/0004_authority.sql.
ALTER TABLE mcp_connections ADD COLUMN role TEXT NOT NULL DEFAULT 'agent'
    CHECK (role IN ('agent', 'operator', 'relay'));
ALTER TABLE sessions ADD COLUMN opened_by_role TEXT NOT NULL DEFAULT 'agent'
    CHECK (opened_by_role IN ('agent', 'operator', 'relay'));
ALTER TABLE sessions ADD COLUMN opened_by_credential TEXT;

CREATE INDEX mcp_connections_open_by_credential
    ON mcp_connections (tenant_id, credential_kind, credential_id) WHERE closed_at IS NULL;
CREATE INDEX mcp_connections_open_by_last_seen
    ON mcp_connections (last_seen_at) WHERE closed_at IS NULL;

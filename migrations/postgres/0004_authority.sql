-- Authority follows the token (SPEC §1 Elevation): a connection and a session
-- remember the role (and credential) that opened them, so an elevation can only
-- be granted on operator-opened ones. Rows from before default to 'agent',
-- which can never be elevated.
ALTER TABLE mcp_connections ADD COLUMN role text NOT NULL DEFAULT 'agent'
    CHECK (role IN ('agent', 'operator', 'relay'));
ALTER TABLE sessions ADD COLUMN opened_by_role text NOT NULL DEFAULT 'agent'
    CHECK (opened_by_role IN ('agent', 'operator', 'relay'));
ALTER TABLE sessions ADD COLUMN opened_by_credential text;

-- The per-credential cap on open connections, and the expiry sweep.
CREATE INDEX mcp_connections_open_by_credential
    ON mcp_connections (tenant_id, credential_kind, credential_id) WHERE closed_at IS NULL;
CREATE INDEX mcp_connections_open_by_last_seen
    ON mcp_connections (last_seen_at) WHERE closed_at IS NULL;

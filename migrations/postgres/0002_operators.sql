-- Operators and credentials: elevations, shared tokens, tracer sessions, and
-- what a replica needs to restore another replica's MCP connection.

CREATE TABLE elevations (
    tenant_id       text NOT NULL REFERENCES tenants (tenant_id),
    elevation_id    uuid NOT NULL,
    credential_id   text NOT NULL,
    subject         text NOT NULL,
    -- Exactly one target: an MCP connection, or (sessionless clients) a brain session.
    connection_id   text,
    session_id      uuid,
    reason          text NOT NULL,
    granted_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    PRIMARY KEY (tenant_id, elevation_id),
    CHECK ((connection_id IS NULL) <> (session_id IS NULL))
);
CREATE INDEX elevations_active ON elevations (tenant_id, credential_id, expires_at) WHERE revoked_at IS NULL;

CREATE TABLE shared_tokens (
    tenant_id   text NOT NULL REFERENCES tenants (tenant_id),
    token_id    uuid NOT NULL,
    name        text NOT NULL,
    -- SHA-256 of the whole token; the token itself is shown once and never stored.
    token_hash  text NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    PRIMARY KEY (tenant_id, token_id),
    UNIQUE (token_hash)
);
CREATE UNIQUE INDEX shared_tokens_live_name ON shared_tokens (tenant_id, name) WHERE revoked_at IS NULL;

ALTER TABLE mcp_connections ADD COLUMN init_params jsonb;
ALTER TABLE mcp_connections ADD COLUMN tracer_session_id uuid;

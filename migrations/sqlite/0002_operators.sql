-- SQLite dialect of migrations/postgres/0002_operators.sql.

CREATE TABLE elevations (
    tenant_id       TEXT NOT NULL REFERENCES tenants (tenant_id),
    elevation_id    BLOB NOT NULL,
    credential_id   TEXT NOT NULL,
    subject         TEXT NOT NULL,
    connection_id   TEXT,
    session_id      BLOB,
    reason          TEXT NOT NULL,
    granted_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    revoked_at      INTEGER,
    PRIMARY KEY (tenant_id, elevation_id),
    CHECK ((connection_id IS NULL) <> (session_id IS NULL))
);
CREATE INDEX elevations_active ON elevations (tenant_id, credential_id, expires_at) WHERE revoked_at IS NULL;

CREATE TABLE shared_tokens (
    tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id),
    token_id    BLOB NOT NULL,
    name        TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER,
    PRIMARY KEY (tenant_id, token_id)
);
CREATE UNIQUE INDEX shared_tokens_live_name ON shared_tokens (tenant_id, name) WHERE revoked_at IS NULL;

ALTER TABLE mcp_connections ADD COLUMN init_params TEXT;
ALTER TABLE mcp_connections ADD COLUMN tracer_session_id BLOB;

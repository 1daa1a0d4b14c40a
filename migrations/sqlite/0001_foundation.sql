-- brain foundation, SQLite dialect of migrations/postgres/0001_foundation.sql.
-- Same tables and keys. Differences: ids are 16-byte BLOB uuids, timestamps are
-- INTEGER microseconds since the Unix epoch (so range comparisons are exact),
-- tags and close_result are JSON text, booleans are 0/1.

CREATE TABLE tenants (
    tenant_id   TEXT PRIMARY KEY,
    created_at  INTEGER NOT NULL
);

CREATE TABLE projects (
    tenant_id   TEXT NOT NULL REFERENCES tenants (tenant_id),
    project     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, project)
);

CREATE TABLE focus_bodies (
    tenant_id           TEXT NOT NULL,
    project             TEXT NOT NULL,
    slot                TEXT NOT NULL,
    body                TEXT NOT NULL DEFAULT '',
    revision            INTEGER NOT NULL DEFAULT 0,
    updated_at          INTEGER,
    updated_by_session  BLOB,
    PRIMARY KEY (tenant_id, project, slot),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

CREATE TABLE focus_history (
    tenant_id   TEXT NOT NULL,
    project     TEXT NOT NULL,
    slot        TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    body        TEXT NOT NULL,
    session_id  BLOB NOT NULL,
    receipt_seq INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, project, slot, revision),
    FOREIGN KEY (tenant_id, project, slot) REFERENCES focus_bodies (tenant_id, project, slot)
);

CREATE TABLE sessions (
    tenant_id                   TEXT NOT NULL,
    session_id                  BLOB NOT NULL,
    project                     TEXT NOT NULL,
    client_key                  TEXT NOT NULL,
    kind                        TEXT NOT NULL CHECK (kind IN ('agent', 'tracer')),
    bound_slot                  TEXT,
    started_focus_revision      INTEGER NOT NULL,
    status                      TEXT NOT NULL
        CHECK (status IN ('open', 'ended', 'conflicted', 'relayed', 'abandoned')),
    opened_at                   INTEGER NOT NULL,
    last_activity_at            INTEGER NOT NULL,
    ended_at                    INTEGER,
    summary                     TEXT,
    next_focus                  TEXT,
    nothing_to_capture_reason   TEXT,
    abandon_reason              TEXT,
    focus_outcome               TEXT CHECK (focus_outcome IN ('applied', 'unchanged', 'conflict')),
    opened_by_kind              TEXT NOT NULL,
    opened_by_subject           TEXT NOT NULL,
    close_digest                TEXT,
    close_result                TEXT,
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);
CREATE INDEX sessions_by_project_status ON sessions (tenant_id, project, status, opened_at DESC);
CREATE INDEX sessions_by_client ON sessions (tenant_id, project, client_key, opened_at DESC);

CREATE TABLE artifacts (
    tenant_id   TEXT NOT NULL,
    artifact_id BLOB NOT NULL,
    project     TEXT NOT NULL,
    session_id  BLOB,
    kind        TEXT NOT NULL CHECK (kind IN ('fact', 'note', 'decision', 'todo', 'link')),
    text        TEXT NOT NULL,
    tags        TEXT NOT NULL DEFAULT '[]',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, artifact_id),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);
CREATE INDEX artifacts_by_session ON artifacts (tenant_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX artifacts_unattributed ON artifacts (tenant_id, project, created_at) WHERE session_id IS NULL;

CREATE TABLE receipts (
    tenant_id       TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    receipt_id      BLOB NOT NULL,
    at              INTEGER NOT NULL,
    tool            TEXT NOT NULL,
    project         TEXT,
    session_id      BLOB,
    credential_kind TEXT NOT NULL,
    subject         TEXT NOT NULL,
    token_id        TEXT,
    connection_id   TEXT,
    elevated        INTEGER NOT NULL,
    outcome         TEXT NOT NULL,
    request_digest  TEXT NOT NULL,
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

CREATE TABLE receipt_heads (
    tenant_id   TEXT PRIMARY KEY REFERENCES tenants (tenant_id),
    seq         INTEGER NOT NULL,
    hash        TEXT NOT NULL
);

CREATE TABLE mcp_connections (
    tenant_id       TEXT NOT NULL,
    connection_id   TEXT NOT NULL,
    credential_kind TEXT NOT NULL,
    credential_id   TEXT NOT NULL,
    opened_at       INTEGER NOT NULL,
    last_seen_at    INTEGER NOT NULL,
    closed_at       INTEGER,
    PRIMARY KEY (tenant_id, connection_id)
);

-- brain foundation: tenants, projects, focus bodies and history, sessions,
-- artifacts, receipts with a per-tenant hash chain, and the MCP connection registry.
-- Every primary key starts with tenant_id so the schema can be distributed by tenant.

CREATE TABLE tenants (
    tenant_id   text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
    tenant_id   text NOT NULL REFERENCES tenants (tenant_id),
    project     text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, project)
);

-- The base focus is the row with slot = '' ; named slots have their own rows.
CREATE TABLE focus_bodies (
    tenant_id           text NOT NULL,
    project             text NOT NULL,
    slot                text NOT NULL,
    body                text NOT NULL DEFAULT '',
    revision            bigint NOT NULL DEFAULT 0,
    updated_at          timestamptz,
    updated_by_session  uuid,
    PRIMARY KEY (tenant_id, project, slot),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

CREATE TABLE focus_history (
    tenant_id   text NOT NULL,
    project     text NOT NULL,
    slot        text NOT NULL,
    revision    bigint NOT NULL,
    body        text NOT NULL,
    session_id  uuid NOT NULL,
    receipt_seq bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, project, slot, revision),
    FOREIGN KEY (tenant_id, project, slot) REFERENCES focus_bodies (tenant_id, project, slot)
);

CREATE TABLE sessions (
    tenant_id                   text NOT NULL,
    session_id                  uuid NOT NULL,
    project                     text NOT NULL,
    client_key                  text NOT NULL,
    kind                        text NOT NULL CHECK (kind IN ('agent', 'tracer')),
    bound_slot                  text,
    started_focus_revision      bigint NOT NULL,
    status                      text NOT NULL
        CHECK (status IN ('open', 'ended', 'conflicted', 'relayed', 'abandoned')),
    opened_at                   timestamptz NOT NULL,
    last_activity_at            timestamptz NOT NULL,
    ended_at                    timestamptz,
    summary                     text,
    next_focus                  text,
    nothing_to_capture_reason   text,
    abandon_reason              text,
    focus_outcome               text CHECK (focus_outcome IN ('applied', 'unchanged', 'conflict')),
    opened_by_kind              text NOT NULL,
    opened_by_subject           text NOT NULL,
    -- SPEC §3.5: the digest and result of the call that closed the session.
    close_digest                text,
    close_result                jsonb,
    PRIMARY KEY (tenant_id, session_id),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);
CREATE INDEX sessions_by_project_status ON sessions (tenant_id, project, status, opened_at DESC);
CREATE INDEX sessions_by_client ON sessions (tenant_id, project, client_key, opened_at DESC);

CREATE TABLE artifacts (
    tenant_id   text NOT NULL,
    artifact_id uuid NOT NULL,
    project     text NOT NULL,
    session_id  uuid,
    kind        text NOT NULL CHECK (kind IN ('fact', 'note', 'decision', 'todo', 'link')),
    text        text NOT NULL,
    tags        text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, artifact_id),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);
CREATE INDEX artifacts_by_session ON artifacts (tenant_id, session_id) WHERE session_id IS NOT NULL;
CREATE INDEX artifacts_unattributed ON artifacts (tenant_id, project, created_at) WHERE session_id IS NULL;

CREATE TABLE receipts (
    tenant_id       text NOT NULL,
    seq             bigint NOT NULL,
    receipt_id      uuid NOT NULL,
    at              timestamptz NOT NULL,
    tool            text NOT NULL,
    project         text,
    session_id      uuid,
    credential_kind text NOT NULL,
    subject         text NOT NULL,
    token_id        text,
    connection_id   text,
    elevated        boolean NOT NULL,
    outcome         text NOT NULL,
    request_digest  text NOT NULL,
    prev_hash       text NOT NULL,
    hash            text NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- The ledger tip, locked FOR UPDATE by each writer: this row serializes a
-- tenant's receipts so the chain never forks or skips a seq.
CREATE TABLE receipt_heads (
    tenant_id   text PRIMARY KEY REFERENCES tenants (tenant_id),
    seq         bigint NOT NULL,
    hash        text NOT NULL
);

CREATE TABLE mcp_connections (
    tenant_id       text NOT NULL,
    connection_id   text NOT NULL,
    credential_kind text NOT NULL,
    credential_id   text NOT NULL,
    opened_at       timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    closed_at       timestamptz,
    PRIMARY KEY (tenant_id, connection_id)
);

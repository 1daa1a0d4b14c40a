-- Memory and audit: full-text search over artifacts, documents, daily briefs,
-- and todo acknowledgement for the briefing's inbox count.

-- 'simple' tokenizes any language without stemming, so non-English text is
-- searchable and never rejected.
ALTER TABLE artifacts ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED;
CREATE INDEX artifacts_search ON artifacts USING GIN (search);
CREATE INDEX artifacts_by_project ON artifacts (tenant_id, project, created_at DESC);
ALTER TABLE artifacts ADD COLUMN acknowledged_at timestamptz;

-- executive_state, critique, sync_note (name ''), and mental_model (named).
CREATE TABLE documents (
    tenant_id   text NOT NULL,
    project     text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('executive_state', 'critique', 'sync_note', 'mental_model')),
    name        text NOT NULL DEFAULT '',
    body        text NOT NULL,
    revision    bigint NOT NULL,
    updated_at  timestamptz NOT NULL,
    updated_by  text NOT NULL,
    PRIMARY KEY (tenant_id, project, kind, name),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

CREATE TABLE daily_briefs (
    tenant_id       text NOT NULL,
    project         text NOT NULL,
    day             date NOT NULL,
    body            text NOT NULL,
    generated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, project, day),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

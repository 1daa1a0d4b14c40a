-- SQLite dialect of migrations/postgres/0003_memory.sql. Full-text search is an
-- FTS5 table over artifacts.text, kept in step by triggers (unicode61 tokenizes
-- any language).

CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    text, content = 'artifacts', content_rowid = 'rowid', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO artifacts_fts (rowid, text) SELECT rowid, text FROM artifacts;
CREATE TRIGGER artifacts_fts_insert AFTER INSERT ON artifacts BEGIN
    INSERT INTO artifacts_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER artifacts_fts_delete AFTER DELETE ON artifacts BEGIN
    INSERT INTO artifacts_fts (artifacts_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER artifacts_fts_update AFTER UPDATE OF text ON artifacts BEGIN
    INSERT INTO artifacts_fts (artifacts_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO artifacts_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE INDEX artifacts_by_project ON artifacts (tenant_id, project, created_at DESC);
ALTER TABLE artifacts ADD COLUMN acknowledged_at INTEGER;

CREATE TABLE documents (
    tenant_id   TEXT NOT NULL,
    project     TEXT NOT NULL,
    kind        TEXT NOT NULL CHECK (kind IN ('executive_state', 'critique', 'sync_note', 'mental_model')),
    name        TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    revision    INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, project, kind, name),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

CREATE TABLE daily_briefs (
    tenant_id       TEXT NOT NULL,
    project         TEXT NOT NULL,
    day             TEXT NOT NULL,
    body            TEXT NOT NULL,
    generated_at    INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, project, day),
    FOREIGN KEY (tenant_id, project) REFERENCES projects (tenant_id, project)
);

-- Recall's full-text index, scoped (third hostile review, M4). FTS5 keeps one
-- index for every tenant, so a MATCH read every tenant's postings of a word
-- and bm25 weighed a word by how common it was in all tenants' artifacts:
-- a tenant's ranks and recall time moved with what other tenants wrote.
-- Now every row carries its tenant and project as one token (fts_scope), a
-- MATCH starts with it, and the rank counts the query's matches in the
-- artifact's own text (recall_search), so nothing of another tenant weighs.
ALTER TABLE artifacts ADD COLUMN fts_scope TEXT GENERATED ALWAYS AS
    ('s' || lower(hex(tenant_id)) || 'p' || lower(hex(project))) VIRTUAL;

DROP TRIGGER artifacts_fts_insert;
DROP TRIGGER artifacts_fts_delete;
DROP TRIGGER artifacts_fts_update;
DROP TABLE artifacts_fts;

CREATE VIRTUAL TABLE artifacts_fts USING fts5(
    text, fts_scope, content = 'artifacts', content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO artifacts_fts (artifacts_fts) VALUES ('rebuild');
CREATE TRIGGER artifacts_fts_insert AFTER INSERT ON artifacts BEGIN
    INSERT INTO artifacts_fts (rowid, text, fts_scope) VALUES (new.rowid, new.text, new.fts_scope);
END;
CREATE TRIGGER artifacts_fts_delete AFTER DELETE ON artifacts BEGIN
    INSERT INTO artifacts_fts (artifacts_fts, rowid, text, fts_scope)
        VALUES ('delete', old.rowid, old.text, old.fts_scope);
END;
CREATE TRIGGER artifacts_fts_update AFTER UPDATE OF text ON artifacts BEGIN
    INSERT INTO artifacts_fts (artifacts_fts, rowid, text, fts_scope)
        VALUES ('delete', old.rowid, old.text, old.fts_scope);
    INSERT INTO artifacts_fts (rowid, text, fts_scope) VALUES (new.rowid, new.text, new.fts_scope);
END;

-- brain matches a search's window itself (brain_core::search_words): the
-- full-text index read the matches of other projects and tenants between a
-- window's rows, and checked phrases on them (3 s of CPU a search, a review
-- measured). Nothing reads it any more, and every remember wrote one entry
-- per word into it.
DROP TRIGGER IF EXISTS artifacts_fts_insert;
DROP TRIGGER IF EXISTS artifacts_fts_delete;
DROP TRIGGER IF EXISTS artifacts_fts_update;
DROP TABLE IF EXISTS artifacts_fts;
ALTER TABLE artifacts DROP COLUMN fts_scope;

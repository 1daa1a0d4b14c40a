-- SQLite dialect of migrations/postgres/0007_hot_path_indexes.sql (SQLite
-- sorts NULL first ascending, so last when descending, as the reads want).
CREATE INDEX sessions_open_agents ON sessions (tenant_id, project, client_key, opened_at DESC)
    WHERE kind = 'agent' AND status = 'open';
CREATE INDEX sessions_recent_closed ON sessions (tenant_id, project, ended_at DESC, session_id)
    WHERE kind = 'agent' AND status <> 'open';
CREATE INDEX artifacts_open_todos ON artifacts (tenant_id, project)
    WHERE kind = 'todo' AND acknowledged_at IS NULL;

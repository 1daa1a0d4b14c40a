-- Every start reads the project's open agent sessions (count, and this
-- client's newest), its last five closed ones and its open todos; every close
-- counts the open sessions again. With only the wide indexes of 0001 each of
-- those scanned every session (or artifact) the project ever had, so a start
-- grew slower with the project's age (issue 11: 2 ms per start at ~500
-- sessions). These partial indexes hold exactly the rows those reads want.
CREATE INDEX sessions_open_agents ON sessions (tenant_id, project, client_key, opened_at DESC)
    WHERE kind = 'agent' AND status = 'open';
CREATE INDEX sessions_recent_closed ON sessions (tenant_id, project, ended_at DESC NULLS LAST, session_id)
    WHERE kind = 'agent' AND status <> 'open';
CREATE INDEX artifacts_open_todos ON artifacts (tenant_id, project)
    WHERE kind = 'todo' AND acknowledged_at IS NULL;

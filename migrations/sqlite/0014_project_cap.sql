-- SQLite dialect of migrations/postgres/0014_project_cap.sql: a tenant holds
-- at most 10,000 projects; an insert of one that exists is never refused, nor
-- one of the server's own (_mcp, _runtime), which do not count.
CREATE TRIGGER projects_cap BEFORE INSERT ON projects
WHEN NEW.project NOT IN ('_mcp', '_runtime')
 AND NOT EXISTS (SELECT 1 FROM projects WHERE tenant_id = NEW.tenant_id AND project = NEW.project)
 AND (SELECT count(*) FROM (SELECT 1 FROM projects WHERE tenant_id = NEW.tenant_id
      AND project NOT IN ('_mcp', '_runtime') LIMIT 10000)) >= 10000
BEGIN
    SELECT RAISE(ABORT, 'brain_project_cap: a tenant holds at most 10000 projects');
END;

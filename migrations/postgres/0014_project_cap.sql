-- A tenant holds at most 10,000 projects. A project is created by the first
-- write that names it, from any of the paths that write (starts, remembers,
-- documents), so the bound is kept where they all meet: an insert into
-- projects. An insert of a project that exists (the writes' ON CONFLICT DO
-- NOTHING) is never refused, nor one of the server's own (_mcp for connections'
-- tracers, _runtime for raw sessions), which do not count. Two creations racing at the bound can both pass
-- it: the overshoot is at most the writers in flight.
CREATE FUNCTION brain_project_cap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.project NOT IN ('_mcp', '_runtime')
       AND NOT EXISTS (SELECT 1 FROM projects WHERE tenant_id = NEW.tenant_id AND project = NEW.project) THEN
        IF (SELECT count(*) FROM (SELECT 1 FROM projects WHERE tenant_id = NEW.tenant_id
                AND project NOT IN ('_mcp', '_runtime') LIMIT 10000) AS held) >= 10000 THEN
            RAISE EXCEPTION 'brain_project_cap: a tenant holds at most 10000 projects'
                USING ERRCODE = '53400';
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER projects_cap BEFORE INSERT ON projects
    FOR EACH ROW EXECUTE FUNCTION brain_project_cap();

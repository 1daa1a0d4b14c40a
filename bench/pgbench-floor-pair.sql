-- pgbench script for bench/pgbench-floor-setup.sql: a start and an end on the
-- floor schema, one project per client, TENANTS (-D TENANTS=N, at most 64)
-- tenants. Prepared mode (-M prepared).
\set p :client_id + 1
\set t random(1, :TENANTS)
SELECT 't' || :t AS tenant, 'p' || :p AS project, gen_random_uuid() AS sid,
    rpad('revision body ' || :client_id, 2048, ' carry the durable decisions forward;') AS body \gset
SELECT revision, seq FROM f_start(:tenant, :project, :sid, 'dddd') \gset s_
SELECT seq FROM f_end(:tenant, :project, :sid, :s_revision, :body, 'dddd', '{"focus_outcome": "applied", "focus_revision_at_end": 2}');

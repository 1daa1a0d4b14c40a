-- pgbench script for bench/pgbench-floor-setup.sql: a start and an end on the
-- floor schema, one project per client, spread over TENANTS (-D TENANTS=N)
-- tenants. At most 64 clients and TENANTS <= 64 (the setup seeds t1-t64 x
-- p1-p64; past either a client finds no focus row and pgbench aborts it).
-- Prepared mode (-M prepared).
\set p :client_id + 1
\set t random(1, :TENANTS)
SELECT 't' || :t AS tenant, 'p' || :p AS project, gen_random_uuid() AS sid,
    rpad('revision body ' || :client_id, 2048, ' carry the durable decisions forward;') AS body \gset
SELECT revision, seq FROM f_start(:tenant, :project, :sid, 'dddd') \gset s_
SELECT seq FROM f_end(:tenant, :project, :sid, :s_revision, :body, 'dddd', '{"focus_outcome": "applied", "focus_revision_at_end": 2}');

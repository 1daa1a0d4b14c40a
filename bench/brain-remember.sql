-- pgbench script: brain's own remember without a session (migration 0009's
-- brain_remember) with no brain in front; see brain-start.sql.
\set p random(1, 8)
\set t random(1, :TENANTS)
SELECT count(*) FROM brain_remember('t' || :t, true, repeat('0', 64), gen_random_uuid(),
    'p' || :p, 'note', 'observation', '{}', now(), gen_random_uuid(), now(), 'brain_remember',
    NULL, 'jwt', 's', NULL, NULL, false, 'ok', 'd', 'a', 'b', 'c');

-- pgbench script: brain's own start (migration 0009's brain_start) with no
-- brain in front, to measure PostgreSQL's ceiling for it on this machine.
-- TENANTS (a pgbench variable, -D TENANTS=N) spreads the starts over N
-- tenants; 1 puts them all on one tenant's receipt chain. Run on a database
-- brain has migrated (brain migrate), not on one brain serves. README,
-- Performance.
\set p random(1, 8)
\set t random(1, :TENANTS)
SELECT count(*) FROM brain_start('t' || :t, repeat('0', 64), 'p' || :p, NULL,
    gen_random_uuid(), 'c' || :client_id, 'agent', 'open', now(), now(), 'jwt', 's', 'agent',
    'cred', gen_random_uuid(), now(), 'brain_session_start', 'jwt', 's', NULL, NULL, false,
    'ok', 'd', 'a', 'b', 'c');

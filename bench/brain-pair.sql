-- pgbench script: a brain_session_start and a brain_session_end as brain sends
-- them to PostgreSQL, with no brain in front: PostgreSQL's own ceiling for a
-- pair on this machine (README, Performance). Run on a database `brain
-- migrate` made, not on one brain serves, in pgbench's prepared mode (-M
-- prepared), as brain's sqlx sends them. TENANTS (-D TENANTS=N) spreads the
-- pairs over N tenants; one project per client, as brain-bench gives each
-- worker its own.
--
-- The statements after "What brain sends" are brain's own texts, in the order
-- brain sends them, with pgbench variables and literals where brain binds
-- parameters: crates/brain-server/tests/pair_statements.rs reads them here and
-- holds them equal to what a pair sends on the wire, so this model cannot
-- drift from brain. The last, an applied end's announcement to resource
-- subscribers, brain sends after the end's commit on another connection,
-- batched with other ends' when they wait (here always alone: a ceiling's
-- worst case). The one statement before them computes what brain
-- computes itself: ids, times, a 2 KB body (brain-bench's size) and the
-- stored answer (the outcome, revisions and counts: the session is its row
-- and the body it wrote its history row, neither stored again). The
-- receipt's hash pieces are short stand-ins;
-- their length does not change the work.
\set p :client_id + 1
\set t random(1, :TENANTS)
SELECT 't' || :t AS tenant, 'p' || :p AS project, gen_random_uuid() AS sid,
    gen_random_uuid() AS start_receipt, gen_random_uuid() AS end_receipt, now() AS at,
    repeat('0', 64) AS genesis, repeat('d', 64) AS digest,
    rpad('revision body ' || :client_id, 2048, ' carry the durable decisions forward;') AS body,
    ARRAY[json_build_object('t', 't' || :t, 'p', 'p' || :p, 's', NULL, 'r', 2)::text] AS changes \gset
-- What brain sends
SELECT part, ord, k, name, txt, n, t1, t2, id FROM brain_start(:tenant, :genesis, :project, NULL,
    :sid, 'bench', 'agent', 'open', :at, :at, 'jwt', 's', 'agent', 'cred', :start_receipt, :at,
    'brain_session_start', 'jwt', 's', NULL, NULL, 'false', 'ok', :digest, 'a', 'b', 'c');
SELECT * FROM brain_peek_close(:tenant, :sid, :at) \gset peek_
\set written :peek_revision + 1
SELECT seq, prev_hash, hash FROM brain_end(:tenant, :sid, NULL, :peek_read_revision,
    :peek_revision, :at, :peek_open_agents, :peek_unattributed_n, :peek_unattributed_ids,
    'ended', :at, :at, 'bench', NULL, NULL, 'applied', NULL, :digest,
    '{"replayed": false, "dry_run": false, "would": null, "focus_outcome": "applied", "focus_at_end": {"revision": 2}, "focus_revision_at_end": 2, "current_focus": null, "current_focus_revision": 2, "focus_diff": "", "unattributed_in_window": {"count": 0, "ids": []}, "remaining_open_session_count": 0}',
    :project, :body, :at, NULL, :end_receipt, :at,
    'brain_session_end', 'jwt', 's', NULL, NULL, 'false', 'ok', :digest, 'a', 'b', 'c',
    :written);
SELECT brain_announce(:changes);

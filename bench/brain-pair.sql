-- pgbench script: a brain_session_start and a brain_session_end as brain sends
-- them to PostgreSQL, with no brain in front: PostgreSQL's own ceiling for a
-- pair on this machine (issue 11; README, Performance). Run on a database
-- `brain migrate` made, not on one brain serves. TENANTS (-D TENANTS=N)
-- spreads the pairs over N tenants; one project per client, as brain-bench
-- gives each worker its own.
--
-- The start is migration 0013's brain_start. The end is brain-store-postgres's
-- tx.rs: BEGIN with the tenant's scope and brain_lock_close (one message in
-- brain, three here), close_counts, apply_close (the session's update, the
-- body's update and its NOTIFY, the pending receipt set as brain.receipt) and
-- brain_place_pending with the COMMIT (one message in brain, two here). The
-- bodies are brain-bench's sizes: a 2 KB focus body, a close_result of about
-- 5 KB (the answer: the session, the diff, focus_at_end's body). The receipt's
-- hash pieces are short stand-ins; their length does not change the work.
\set p :client_id + 1
\set t random(1, :TENANTS)
SELECT gen_random_uuid() AS sid, rpad('revision body ' || :client_id, 2048, ' carry the durable decisions forward;') AS body \gset
SELECT count(*) FROM brain_start('t' || :t::int, repeat('0', 64), 'p' || :p::int, NULL,
    :sid::uuid, 'bench', 'agent', 'open', now(), now(), 'jwt', 's', 'agent',
    'cred', gen_random_uuid(), now(), 'brain_session_start', 'jwt', 's', NULL, NULL, false,
    'ok', repeat('d', 64), 'a', 'b', 'c');
BEGIN;
SELECT set_config('brain.tenant', 't' || :t::int, true);
SELECT revision AS rev FROM brain_lock_close('t' || :t::int, :sid::uuid) \gset
SELECT (SELECT count(*) FROM sessions WHERE tenant_id = 't' || :t::int AND project = 'p' || :p::int
          AND status = 'open' AND kind = 'agent') AS open_agents,
   (SELECT count(*) FROM artifacts WHERE tenant_id = 't' || :t::int AND project = 'p' || :p::int
      AND session_id IS NULL AND created_at >= now() - interval '1 s' AND created_at <= now()) AS unattributed_n,
   ARRAY(SELECT artifact_id FROM artifacts WHERE tenant_id = 't' || :t::int AND project = 'p' || :p::int
      AND session_id IS NULL AND created_at >= now() - interval '1 s' AND created_at <= now()
      ORDER BY created_at, artifact_id LIMIT 20) AS unattributed_ids;
\set nrev :rev + 1
WITH s AS (UPDATE sessions SET status = 'ended', ended_at = now(), last_activity_at = now(),
        summary = 'bench', next_focus = :body::text, nothing_to_capture_reason = NULL,
        focus_outcome = 'applied', abandon_reason = NULL, close_digest = repeat('d', 64),
        close_result = jsonb_build_object('session', jsonb_build_object('session_id', :sid::uuid,
            'status', 'ended', 'summary', 'bench', 'kind', 'agent', 'project', 'p' || :p::int,
            'opened_at', now(), 'ended_at', now(), 'last_activity_at', now(), 'client_key', 'bench'),
          'focus_diff', '--- revision ' || :rev::bigint || E'\n+++ revision ' || :nrev::bigint || E'\n+' || :body::text,
          'focus_at_end', jsonb_build_object('body', :body::text, 'revision', :nrev::bigint, 'updated_at', now()),
          'current_focus', NULL, 'focus_outcome', 'applied', 'replayed', false, 'dry_run', false)
        WHERE tenant_id = 't' || :t::int AND session_id = :sid::uuid),
  u AS (UPDATE focus_bodies SET body = :body::text, revision = :nrev::bigint,
        updated_at = now(), updated_by_session = :sid::uuid
        WHERE tenant_id = 't' || :t::int AND project = 'p' || :p::int AND slot = '' RETURNING 1)
SELECT (SELECT pg_notify('brain_focus', json_build_array('t' || :t::int, 'p' || :p::int, NULL, :nrev::bigint)::text) FROM u),
  set_config('brain.receipt', json_build_object('tenant', 't' || :t::int, 'receipt_id', gen_random_uuid(),
     'at', now(), 'tool', 'brain_session_end', 'project', 'p' || :p::int, 'session_id', :sid::uuid,
     'credential_kind', 'jwt', 'subject', 's', 'token_id', NULL, 'connection_id', NULL,
     'elevated', false, 'outcome', 'ok', 'request_digest', repeat('d', 64),
     'before_prev', 'a', 'before_seq', 'b', 'after_seq', 'c',
     'history', json_build_object('project', 'p' || :p::int, 'slot', '', 'revision', :nrev::bigint,
        'session_id', :sid::uuid, 'at', now()))::text, true);
SELECT seq, prev_hash, hash FROM brain_place_pending();
COMMIT;

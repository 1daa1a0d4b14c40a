-- The least a start+end pair can store under brain's contract, for pgbench
-- (bench/pgbench-floor-pair.sql): a session row opened and then closed, the
-- focus row's new revision, that revision's history row with its 2 KB body,
-- two receipts chained on the tenant's tip, and a short stand-in for the
-- close's stored answer. Each write is one call of a function, as brain sends
-- them; primary keys only, and fillfactor 70 on the session and focus tables
-- (brain sets none) so their updates find room on their page; no usage
-- counting, foreign keys, row security, briefing reads, peek or
-- announcement. Not brain's schema: a yardstick for how far brain's own
-- statements (bench/brain-pair.sql) are from what the facts alone cost
-- (docs/performance.md, "The least a pair can store"). It seeds tenants t1-t64
-- with projects p1-p64 each, so at most 64 clients and TENANTS <= 64: past
-- either, a client finds no focus row and pgbench aborts it. Needs
-- PostgreSQL 13 or later (gen_random_uuid). Run on a scratch database:
--   psql -f bench/pgbench-floor-setup.sql URL
--   pgbench -n -M prepared -c 8 -j 2 -T 8 -D TENANTS=64 -f bench/pgbench-floor-pair.sql URL
DROP TABLE IF EXISTS f_tip, f_receipts, f_sessions, f_focus, f_history;
CREATE TABLE f_tip (tenant text PRIMARY KEY, seq bigint NOT NULL, hash text NOT NULL, prev_hash text);
CREATE TABLE f_receipts (tenant text, seq bigint, receipt_id uuid NOT NULL, at timestamptz NOT NULL,
  tool text NOT NULL, project text, session_id uuid, subject text NOT NULL, outcome text NOT NULL,
  request_digest text NOT NULL, prev_hash text NOT NULL, hash text NOT NULL, PRIMARY KEY (tenant, seq));
CREATE TABLE f_sessions (tenant text, session_id uuid, project text NOT NULL, client_key text NOT NULL,
  status text NOT NULL, opened_at timestamptz NOT NULL, ended_at timestamptz, summary text,
  close_result jsonb, PRIMARY KEY (tenant, session_id)) WITH (fillfactor = 70);
CREATE TABLE f_focus (tenant text, project text, slot text, revision bigint NOT NULL,
  updated_at timestamptz, PRIMARY KEY (tenant, project, slot)) WITH (fillfactor = 70);
CREATE TABLE f_history (tenant text, project text, slot text, revision bigint, body text NOT NULL,
  session_id uuid NOT NULL, receipt_seq bigint NOT NULL, created_at timestamptz NOT NULL,
  PRIMARY KEY (tenant, project, slot, revision));
-- brain's three session indexes, for measuring what they cost the floor
-- (docs/performance.md): uncomment to add them.
-- CREATE INDEX ON f_sessions (tenant, project, status, opened_at DESC, session_id DESC);
-- CREATE INDEX ON f_sessions (tenant, project, client_key, opened_at DESC) WHERE status = 'open';
-- CREATE INDEX ON f_sessions (tenant, project, ended_at DESC NULLS LAST, session_id) WHERE status <> 'open';
INSERT INTO f_tip SELECT 't' || i, 0, repeat('0', 64) FROM generate_series(1, 64) i;
INSERT INTO f_focus SELECT 't' || t, 'p' || p, '', 0, now() FROM generate_series(1, 64) t, generate_series(1, 64) p;

CREATE OR REPLACE FUNCTION f_receipt(p_tenant text, p_tool text, p_project text, p_session uuid, p_digest text,
  OUT seq bigint, OUT prev_hash text, OUT hash text) LANGUAGE plpgsql AS $$
BEGIN
  UPDATE f_tip h SET prev_hash = h.hash, seq = h.seq + 1,
      hash = encode(sha256(convert_to('a' || h.hash || 'b' || (h.seq + 1)::text || 'c', 'UTF8')), 'hex')
    WHERE h.tenant = p_tenant RETURNING h.seq, h.prev_hash, h.hash INTO seq, prev_hash, hash;
  INSERT INTO f_receipts VALUES (p_tenant, seq, gen_random_uuid(), now(), p_tool, p_project, p_session,
    's', 'ok', p_digest, prev_hash, hash);
END $$;

CREATE OR REPLACE FUNCTION f_start(p_tenant text, p_project text, p_session uuid, p_digest text)
RETURNS TABLE (revision bigint, seq bigint) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO f_sessions (tenant, session_id, project, client_key, status, opened_at)
    VALUES (p_tenant, p_session, p_project, 'bench', 'open', now());
  RETURN QUERY SELECT f.revision, r.seq FROM f_focus f, f_receipt(p_tenant, 'start', p_project, p_session, p_digest) r
    WHERE f.tenant = p_tenant AND f.project = p_project AND f.slot = '';
END $$;

CREATE OR REPLACE FUNCTION f_end(p_tenant text, p_project text, p_session uuid, p_found bigint,
  p_body text, p_digest text, p_result jsonb) RETURNS TABLE (seq bigint) LANGUAGE plpgsql AS $$
DECLARE r_seq bigint;
BEGIN
  UPDATE f_focus f SET revision = p_found + 1, updated_at = now()
    WHERE f.tenant = p_tenant AND f.project = p_project AND f.slot = '' AND f.revision = p_found;
  IF NOT FOUND THEN RETURN; END IF;
  UPDATE f_sessions s SET status = 'ended', ended_at = now(), summary = 'bench', close_result = p_result
    WHERE s.tenant = p_tenant AND s.session_id = p_session AND s.status = 'open';
  SELECT r.seq INTO r_seq FROM f_receipt(p_tenant, 'end', p_project, p_session, p_digest) r;
  INSERT INTO f_history VALUES (p_tenant, p_project, '', p_found + 1, p_body, p_session, r_seq, now());
  RETURN QUERY SELECT r_seq;
END $$;

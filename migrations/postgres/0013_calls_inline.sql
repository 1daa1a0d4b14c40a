-- A call inside a call costs more than what it runs (issue 11). PostgreSQL's
-- pg_stat_statements (track = all) at one client, start+end pairs: the three
-- statements of brain_place_receipt took 0.044 ms per call together, the call
-- around them 0.11-0.13 ms (a query for the call, a tuple store for its row,
-- a PL/pgSQL frame); brain_briefing_sources' one query 0.038 ms, its call
-- 0.096 ms; brain_ensure_project's two tests 0.017 ms, its call 0.035 ms; and
-- brain_receipt_hash, an SQL function, is run as its own query from PL/pgSQL.
-- So the two functions of every start and end, brain_start and
-- brain_place_pending, run those statements themselves: the same statements
-- in the same order, with the same locks (the tip still taken last). The
-- functions of 0009 stay for their other callers (brain_remember and a
-- resume's briefing) and as what tests/one_trip.rs holds these to.

CREATE OR REPLACE FUNCTION brain_start(
    p_tenant text, p_genesis text, p_project text, p_slot text,
    p_session uuid, p_client_key text, p_kind text, p_status text,
    p_opened_at timestamptz, p_last_activity_at timestamptz, p_opened_by_kind text,
    p_opened_by_subject text, p_opened_by_role text, p_opened_by_credential text,
    p_receipt_id uuid, p_at timestamptz, p_tool text,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text)
RETURNS TABLE (part text, ord bigint, k text, name text, txt text, n bigint,
    t1 timestamptz, t2 timestamptz, id uuid)
LANGUAGE plpgsql AS $$
DECLARE
    started bigint;
    r_seq bigint;
    r_prev text;
    r_hash text;
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    -- brain_ensure_project
    IF NOT EXISTS (SELECT 1 FROM receipt_heads h WHERE h.tenant_id = p_tenant) THEN
        INSERT INTO tenants (tenant_id) VALUES (p_tenant) ON CONFLICT DO NOTHING;
        INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES (p_tenant, 0, p_genesis)
            ON CONFLICT DO NOTHING;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM focus_bodies f WHERE f.tenant_id = p_tenant
                   AND f.project = p_project AND f.slot = '') THEN
        INSERT INTO projects (tenant_id, project, created_at) VALUES (p_tenant, p_project, p_opened_at)
            ON CONFLICT DO NOTHING;
        INSERT INTO focus_bodies (tenant_id, project, slot) VALUES (p_tenant, p_project, '')
            ON CONFLICT DO NOTHING;
    END IF;
    IF p_slot IS NOT NULL AND NOT EXISTS (SELECT 1 FROM focus_bodies f
            WHERE f.tenant_id = p_tenant AND f.project = p_project AND f.slot = p_slot) THEN
        INSERT INTO focus_bodies (tenant_id, project, slot) VALUES (p_tenant, p_project, p_slot)
            ON CONFLICT DO NOTHING;
    END IF;
    SELECT f.revision INTO started FROM focus_bodies f
        WHERE f.tenant_id = p_tenant AND f.project = p_project AND f.slot = '';
    INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, bound_slot,
        started_focus_revision, status, opened_at, last_activity_at, opened_by_kind,
        opened_by_subject, opened_by_role, opened_by_credential)
    VALUES (p_tenant, p_session, p_project, p_client_key, p_kind, p_slot,
        COALESCE(started, 0), p_status, p_opened_at, p_last_activity_at, p_opened_by_kind,
        p_opened_by_subject, p_opened_by_role, p_opened_by_credential);
    RETURN QUERY SELECT 'opened'::text, f.revision, NULL::text, NULL::text, f.body,
            COALESCE(started, 0), f.updated_at, NULL::timestamptz, f.updated_by_session
        FROM (SELECT 1) one
        LEFT JOIN focus_bodies f ON f.tenant_id = p_tenant AND f.project = p_project
            AND f.slot = p_slot;
    -- brain_briefing_sources
    RETURN QUERY
        SELECT 'base'::text, 0::bigint, NULL::text, NULL::text, b.body, b.revision,
               NULL::timestamptz, NULL::timestamptz, NULL::uuid
          FROM focus_bodies b WHERE b.tenant_id = p_tenant AND b.project = p_project AND b.slot = ''
        UNION ALL (SELECT 'prev', 0, NULL, NULL, NULL,
               (SELECT count(*) FROM artifacts a WHERE a.tenant_id = p_tenant
                  AND a.session_id = s.session_id),
               s.opened_at, s.last_activity_at, s.session_id
          FROM sessions s WHERE s.tenant_id = p_tenant AND s.project = p_project
           AND s.client_key = p_client_key AND s.kind = 'agent' AND s.status = 'open'
           AND s.session_id <> p_session ORDER BY s.opened_at DESC LIMIT 1)
        UNION ALL SELECT 'doc', 0, d.kind, d.name, d.body, d.revision, NULL, NULL, NULL
          FROM documents d WHERE d.tenant_id = p_tenant AND d.project = p_project AND d.revision > 0
           AND (d.kind = 'mental_model' OR (d.kind IN ('executive_state', 'sync_note') AND d.name = ''))
        UNION ALL (SELECT 'brief', 0, NULL, NULL, db.body, NULL, db.generated_at, NULL, NULL
          FROM daily_briefs db WHERE db.tenant_id = p_tenant AND db.project = p_project
          ORDER BY db.day DESC LIMIT 1)
        UNION ALL SELECT 'inbox', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL FROM artifacts a
          WHERE a.tenant_id = p_tenant AND a.project = p_project AND a.kind = 'todo'
           AND a.acknowledged_at IS NULL
        UNION ALL SELECT 'open', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.status = 'open'
           AND s.kind = 'agent'
        UNION ALL (SELECT 'recent', row_number() OVER (ORDER BY s.ended_at DESC NULLS LAST, s.session_id),
               s.status, NULL, s.summary, NULL, s.ended_at, NULL, s.session_id FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.kind = 'agent'
           AND s.status <> 'open'
          ORDER BY s.ended_at DESC NULLS LAST, s.session_id LIMIT 5);
    -- brain_place_receipt, with brain_receipt_hash's expression
    SELECT h.seq + 1, h.hash INTO r_seq, r_prev
        FROM receipt_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tenant has no ledger tip';
    END IF;
    r_hash := encode(sha256(convert_to(
        p_before_prev || r_prev || p_before_seq || r_seq::text || p_after_seq, 'UTF8')), 'hex');
    INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id,
        credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest,
        prev_hash, hash)
    VALUES (p_tenant, r_seq, p_receipt_id, p_at, p_tool, p_project, p_session,
        p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
        p_digest, r_prev, r_hash);
    UPDATE receipt_heads h SET seq = r_seq, hash = r_hash WHERE h.tenant_id = p_tenant;
    RETURN QUERY SELECT 'receipt'::text, 0::bigint, r_prev, r_hash, NULL::text, r_seq,
            NULL::timestamptz, NULL::timestamptz, NULL::uuid;
END
$$;

CREATE OR REPLACE FUNCTION brain_place_pending(OUT seq bigint, OUT prev_hash text, OUT hash text)
LANGUAGE plpgsql AS $$
DECLARE
    p jsonb := NULLIF(current_setting('brain.receipt', true), '')::jsonb;
    tenant text;
BEGIN
    IF p IS NULL THEN
        RAISE EXCEPTION 'no receipt pending';
    END IF;
    tenant := p->>'tenant';
    IF tenant IS DISTINCT FROM NULLIF(current_setting('brain.tenant', true), '') THEN
        RAISE EXCEPTION 'a pending receipt of another tenant';
    END IF;
    -- brain_place_receipt, with brain_receipt_hash's expression
    SELECT h.seq + 1, h.hash INTO seq, prev_hash
        FROM receipt_heads h WHERE h.tenant_id = tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tenant has no ledger tip';
    END IF;
    hash := encode(sha256(convert_to(
        (p->>'before_prev') || prev_hash || (p->>'before_seq') || seq::text || (p->>'after_seq'),
        'UTF8')), 'hex');
    INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id,
        credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest,
        prev_hash, hash)
    VALUES (tenant, seq, (p->>'receipt_id')::uuid, (p->>'at')::timestamptz, p->>'tool',
        p->>'project', (p->>'session_id')::uuid, p->>'credential_kind', p->>'subject',
        p->>'token_id', p->>'connection_id', (p->>'elevated')::boolean, p->>'outcome',
        p->>'request_digest', prev_hash, hash);
    UPDATE receipt_heads h SET seq = brain_place_pending.seq, hash = brain_place_pending.hash
        WHERE h.tenant_id = tenant;
    IF p ? 'history' THEN
        INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id,
            receipt_seq, created_at)
        SELECT f.tenant_id, f.project, f.slot, f.revision, f.body,
            (p#>>'{history,session_id}')::uuid, seq, (p#>>'{history,at}')::timestamptz
        FROM focus_bodies f
        WHERE f.tenant_id = tenant AND f.project = p#>>'{history,project}'
          AND f.slot = p#>>'{history,slot}' AND f.revision = (p#>>'{history,revision}')::bigint;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the focus body the receipt names was not written';
        END IF;
    END IF;
    PERFORM set_config('brain.receipt', '', true);
END
$$;

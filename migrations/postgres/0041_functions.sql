-- Every stored function of brain's PostgreSQL schema, as it stands: the one
-- place to read and change them. Each statement is CREATE OR REPLACE, so the
-- file can be run again on any database at the newest migration.
--
-- To change a function: edit it here, then copy this whole file, unchanged,
-- into a new migration named NNNN_functions.sql (tests/functions.rs holds the
-- newest such migration equal to this file). Earlier migrations keep the
-- versions they created, as history; a function no longer wanted is dropped
-- by a migration of its own.
--
-- Each write function sets brain.tenant transaction-locally (or runs where
-- the caller has), so row-level security applies to every statement in it,
-- and every statement names its tenant as well. SECURITY INVOKER (the
-- default): the caller's policies.
--
-- Bodies stored once (migrations 0033-0038), read by the same expressions as
-- brain_store_sqlx's session_columns! and focus_body!, written out where they
-- are read (a SQL function holding a scalar subquery is not inlined, and
-- each call plans its query again):
-- * a focus row's body is the history row of its revision, or, where there
--   is none (revision 0), the row's own text: COALESCE((SELECT h.body FROM
--   focus_history h WHERE <the row's key> AND h.revision = f.revision), f.body);
-- * a session's next_focus is its own text, or, when next_focus_revision
--   names the body its close wrote or left as it found it, that history row's.

-- ========================================================================
-- Receipts: the hash and the place in the tenant's chain
-- ========================================================================

-- A receipt's hash: sha256 of its canonical text, the three pieces
-- brain_core::receipt::Receipt::frame builds around prev_hash and seq. brain
-- serve checks it against brain-core's own hashing with a fixed receipt
-- before it serves (PgStore::receipt_hash_agrees).
CREATE OR REPLACE FUNCTION brain_receipt_hash(p_before_prev text, p_prev_hash text, p_before_seq text,
    p_seq bigint, p_after_seq text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(
        p_before_prev || p_prev_hash || p_before_seq || p_seq::text || p_after_seq, 'UTF8')), 'hex')
$$;

-- The receipt after the tenant's tip: lock the tip, hash the receipt's
-- canonical text with it (brain_core::receipt::Receipt::frame's pieces
-- p_before_prev, p_before_seq, p_after_seq around prev_hash and seq), write the
-- receipt and the new tip. The caller has set brain.tenant.
CREATE OR REPLACE FUNCTION brain_place_receipt(
    p_tenant text, p_receipt_id uuid, p_at timestamptz, p_tool text, p_project text,
    p_session uuid, p_credential_kind text, p_subject text, p_token_id text,
    p_connection_id text, p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT h.seq + 1, h.hash INTO seq, prev_hash
        FROM receipt_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tenant has no ledger tip';
    END IF;
    hash := brain_receipt_hash(p_before_prev, prev_hash, p_before_seq, seq, p_after_seq);
    INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id,
        credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest,
        prev_hash, hash)
    VALUES (p_tenant, seq, p_receipt_id, p_at, p_tool, p_project, p_session,
        p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
        p_digest, prev_hash, hash);
    UPDATE receipt_heads h SET seq = brain_place_receipt.seq, hash = brain_place_receipt.hash
        WHERE h.tenant_id = p_tenant;
END
$$;

-- Place the receipt the transaction left in `brain.receipt` (ledger::pending):
-- lock the tip, hash, write the receipt, its focus history row if any, and
-- the new tip. Sent with the COMMIT, so the tip is held for no round trip.
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
    -- brain_place_receipt's statements and brain_receipt_hash's expression, run
    -- here: a call costs more than they do. brain checks every hash placed
    -- against brain-core's (ledger::placed).
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
        SELECT f.tenant_id, f.project, f.slot, f.revision,
            COALESCE(p#>>'{history,body}', f.body),
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

-- ========================================================================
-- Writes in one call
-- ========================================================================

-- Tenant $1 with its ledger tip (genesis hash p_genesis) and project p_project
-- with its empty base focus, when missing (ledger::ENSURE_PROJECT). Each row
-- is looked for first: an INSERT … ON CONFLICT that meets a row another
-- transaction is updating waits for that transaction to end, and the ledger
-- tip and the base focus are updated by every write of the tenant, so a start
-- would queue behind the tip's holder from its first statement on. A plain
-- read does not wait; the INSERT only runs for a row not there yet.
CREATE OR REPLACE FUNCTION brain_ensure_project(p_tenant text, p_genesis text, p_project text,
    p_at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM receipt_heads h WHERE h.tenant_id = p_tenant) THEN
        INSERT INTO tenants (tenant_id) VALUES (p_tenant) ON CONFLICT DO NOTHING;
        INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES (p_tenant, 0, p_genesis)
            ON CONFLICT DO NOTHING;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM focus_bodies f WHERE f.tenant_id = p_tenant
                   AND f.project = p_project AND f.slot = '') THEN
        INSERT INTO projects (tenant_id, project, created_at) VALUES (p_tenant, p_project, p_at)
            ON CONFLICT DO NOTHING;
        INSERT INTO focus_bodies (tenant_id, project, slot) VALUES (p_tenant, p_project, '')
            ON CONFLICT DO NOTHING;
    END IF;
END
$$;

-- brain_remember: the project when p_ensure, the artifact (in session
-- p_artifact_session's ledger when one is named; the caller has locked and
-- touched it), its receipt (whose p_session may be the connection's tracer
-- when the artifact has none). Returns the receipt's place.
CREATE OR REPLACE FUNCTION brain_remember(
    p_tenant text, p_ensure boolean, p_genesis text,
    p_artifact_id uuid, p_project text, p_kind text, p_text text, p_tags text[],
    p_created_at timestamptz,
    p_receipt_id uuid, p_at timestamptz, p_tool text, p_session uuid,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text, p_artifact_session uuid,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    IF p_ensure THEN
        PERFORM brain_ensure_project(p_tenant, p_genesis, p_project, p_created_at);
    END IF;
    INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, text, tags,
        created_at)
    VALUES (p_tenant, p_artifact_id, p_project, p_artifact_session, p_kind, p_text, p_tags,
        p_created_at);
    SELECT r.seq, r.prev_hash, r.hash INTO seq, prev_hash, hash
        FROM brain_place_receipt(p_tenant, p_receipt_id, p_at, p_tool, p_project, p_session,
            p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
            p_digest, p_before_prev, p_before_seq, p_after_seq) r;
END
$$;

-- brain_remember's call inside a transaction that has begun (a remember with
-- a session, which the caller has locked first): its arguments left in the
-- transaction-local setting brain.remember, run with the COMMIT in one
-- message as brain_place_pending is, so the tenant's tip is held for no round
-- trip to brain.
CREATE OR REPLACE FUNCTION brain_remember_pending(OUT seq bigint, OUT prev_hash text,
    OUT hash text)
LANGUAGE plpgsql AS $$
DECLARE
    p jsonb := NULLIF(current_setting('brain.remember', true), '')::jsonb;
BEGIN
    IF p IS NULL THEN
        RAISE EXCEPTION 'no remember pending';
    END IF;
    IF p->>'tenant' IS DISTINCT FROM NULLIF(current_setting('brain.tenant', true), '') THEN
        RAISE EXCEPTION 'a pending remember of another tenant';
    END IF;
    SELECT r.seq, r.prev_hash, r.hash INTO seq, prev_hash, hash
        FROM brain_remember(p->>'tenant', (p->>'ensure')::boolean, p->>'genesis',
            (p->>'artifact_id')::uuid, p->>'project', p->>'kind', p->>'text',
            ARRAY(SELECT e FROM jsonb_array_elements_text(p->'tags') WITH ORDINALITY t(e, i)
                ORDER BY i),
            (p->>'created_at')::timestamptz, (p->>'receipt_id')::uuid,
            (p->>'at')::timestamptz, p->>'tool', (p->>'session_id')::uuid,
            p->>'credential_kind', p->>'subject', p->>'token_id', p->>'connection_id',
            (p->>'elevated')::boolean, p->>'outcome', p->>'request_digest',
            p->>'before_prev', p->>'before_seq', p->>'after_seq',
            (p->>'artifact_session')::uuid) r;
    PERFORM set_config('brain.remember', '', true);
END
$$;

-- Everything a session's briefing reads but its mission recall, one row per
-- item, told apart by `part` (brain-store-postgres's opening::sources_from
-- reads them): the base focus, the client's other open session with its ledger
-- size, the project's documents, its latest daily brief, its open todos and
-- open sessions counted, its last five closed sessions. Run by brain_start
-- and by a resume; the caller has set brain.tenant. Each count stops at
-- 1,000 (brain_core::store::COUNTED_UP_TO): the rows counted are ones a
-- client can add without bound, and a count that read them all made every
-- start of the project cost in proportion (20,000 open sessions: 2 ms a count).
CREATE OR REPLACE FUNCTION brain_briefing_sources(p_tenant text, p_project text, p_client_key text,
    p_session uuid)
RETURNS TABLE (part text, ord bigint, k text, name text, txt text, n bigint,
    t1 timestamptz, t2 timestamptz, id uuid)
LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
BEGIN
    RETURN QUERY
        SELECT 'base'::text, 0::bigint, NULL::text, NULL::text, COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = b.tenant_id
                   AND h.project = b.project AND h.slot = b.slot AND h.revision = b.revision),
                   b.body), b.revision,
               NULL::timestamptz, NULL::timestamptz, NULL::uuid
          FROM focus_bodies b WHERE b.tenant_id = p_tenant AND b.project = p_project AND b.slot = ''
        UNION ALL (SELECT 'prev', 0, NULL, NULL, NULL,
               (SELECT count(*) FROM (SELECT 1 FROM artifacts a WHERE a.tenant_id = p_tenant
                  AND a.session_id = s.session_id LIMIT 1000) counted),
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
        UNION ALL SELECT 'inbox', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL
          FROM (SELECT 1 FROM artifacts a
          WHERE a.tenant_id = p_tenant AND a.project = p_project AND a.kind = 'todo'
           AND a.acknowledged_at IS NULL LIMIT 1000) counted
        UNION ALL SELECT 'open', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL
          FROM (SELECT 1 FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.status = 'open'
           AND s.kind = 'agent' LIMIT 1000) counted
        UNION ALL (SELECT 'recent', row_number() OVER (ORDER BY s.ended_at DESC NULLS LAST, s.session_id),
               s.status, NULL, s.summary, NULL, s.ended_at, NULL, s.session_id FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.kind = 'agent'
           AND s.status <> 'open'
          ORDER BY s.ended_at DESC NULLS LAST, s.session_id LIMIT 5);
END
$$;

-- A start in one call: open the session (its slot too, when it binds one),
-- read its briefing's sources, place its receipt with the tip locked last.
-- One row per item, told apart by `part` (one_call_writes::start reads them).
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
LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
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
    RETURN QUERY SELECT 'opened'::text, f.revision, NULL::text, NULL::text, COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = f.tenant_id
                   AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision),
                   f.body),
            COALESCE(started, 0), f.updated_at, NULL::timestamptz, f.updated_by_session
        FROM (SELECT 1) one
        LEFT JOIN focus_bodies f ON f.tenant_id = p_tenant AND f.project = p_project
            AND f.slot = p_slot;
    -- brain_briefing_sources
    RETURN QUERY
        SELECT 'base'::text, 0::bigint, NULL::text, NULL::text, COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = b.tenant_id
                   AND h.project = b.project AND h.slot = b.slot AND h.revision = b.revision),
                   b.body), b.revision,
               NULL::timestamptz, NULL::timestamptz, NULL::uuid
          FROM focus_bodies b WHERE b.tenant_id = p_tenant AND b.project = p_project AND b.slot = ''
        UNION ALL (SELECT 'prev', 0, NULL, NULL, NULL,
               (SELECT count(*) FROM (SELECT 1 FROM artifacts a WHERE a.tenant_id = p_tenant
                  AND a.session_id = s.session_id LIMIT 1000) counted),
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
        UNION ALL SELECT 'inbox', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL
          FROM (SELECT 1 FROM artifacts a
          WHERE a.tenant_id = p_tenant AND a.project = p_project AND a.kind = 'todo'
           AND a.acknowledged_at IS NULL LIMIT 1000) counted
        UNION ALL SELECT 'open', 0, NULL, NULL, NULL, count(*), NULL, NULL, NULL
          FROM (SELECT 1 FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.status = 'open'
           AND s.kind = 'agent' LIMIT 1000) counted
        UNION ALL (SELECT 'recent', row_number() OVER (ORDER BY s.ended_at DESC NULLS LAST, s.session_id),
               s.status, NULL, s.summary, NULL, s.ended_at, NULL, s.session_id FROM sessions s
          WHERE s.tenant_id = p_tenant AND s.project = p_project AND s.kind = 'agent'
           AND s.status <> 'open'
          ORDER BY s.ended_at DESC NULLS LAST, s.session_id LIMIT 5);
    -- brain_place_receipt's statements and brain_receipt_hash's expression, run
    -- here: a call costs more than they do. brain checks every hash placed
    -- against brain-core's (ledger::placed).
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

-- An end in one call (brain_core::flow::close_in_one_call), decided by brain
-- on brain_peek_close's read: it writes only if the session is still open
-- and bound as read (p_bound_slot, p_read_revision), its target body is
-- still at p_found, and the answer's counts as of p_until, counted again
-- once both rows are held, are as read; else it writes nothing and answers
-- no row, and brain ends the session again with locks. The ends on one
-- focus serialize on its body row, and each counts the sessions the ends
-- on that focus before it left open, as the locked end does: the recount
-- is a statement of its own, so under READ COMMITTED (brain's level) it
-- sees every end that held the body before this one and has committed.
-- Rows another transaction holds count as moved (SKIP LOCKED): in a group commit the batch holds the tenant's tip
-- from its first write on, and a locking end that holds these rows waits
-- for that tip, so waiting here could deadlock. The session, its body, the
-- receipt with the tip locked last, and the body's
-- history row, which names the receipt. The caller's statement is the
-- transaction (alone or the batch's), so the COMMIT follows. p_change is
-- not read since migration 0030 (brain announces an applied end to resource
-- subscribers after its commit, not with a NOTIFY in it); the parameter
-- stays so replicas of the build before can call the function while they roll.
-- p_next_focus_revision (migration 0035): the revision of the body this end
-- writes when that body is exactly the session's next_focus, which brain
-- then passes as NULL: the text is stored once, in the history row
-- (brain_core::flow::StoredNextFocus). Since migration 0041 also the
-- revision found (p_found, above 0) when the end leaves that body as it is
-- and its next_focus is exactly it (unchanged).
CREATE OR REPLACE FUNCTION brain_end(
    p_tenant text, p_session uuid, p_bound_slot text, p_read_revision bigint, p_found bigint,
    p_until timestamptz, p_open_agents bigint, p_unattributed_n bigint, p_unattributed_ids uuid[],
    p_status text, p_ended_at timestamptz, p_last_activity_at timestamptz, p_summary text,
    p_next_focus text, p_nothing_reason text, p_focus_outcome text, p_abandon_reason text,
    p_close_digest text, p_close_result jsonb,
    p_project text, p_body text, p_body_at timestamptz, p_change text,
    p_receipt_id uuid, p_at timestamptz, p_tool text,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text, p_next_focus_revision bigint,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
RETURNS SETOF record LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
DECLARE
    slot_key text := COALESCE(p_bound_slot, '');
    since timestamptz;
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    IF p_next_focus_revision IS NOT NULL AND (p_next_focus IS NOT NULL
            OR (p_body IS NOT NULL AND p_next_focus_revision <> p_found + 1)
            OR (p_body IS NULL AND (p_next_focus_revision <> p_found OR p_found < 1))) THEN
        RAISE EXCEPTION 'next_focus_revision names no body this end writes or found';
    END IF;
    SELECT s.opened_at INTO since FROM sessions s
        WHERE s.tenant_id = p_tenant AND s.session_id = p_session AND s.project = p_project
        AND s.status = 'open' AND s.bound_slot IS NOT DISTINCT FROM p_bound_slot
        AND s.read_revision IS NOT DISTINCT FROM p_read_revision
        FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM focus_bodies f WHERE f.tenant_id = p_tenant AND f.project = p_project
        AND f.slot = slot_key AND f.revision = p_found
        FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM 1 FROM brain_close_counts(p_tenant, p_project, since, p_until) c
        WHERE c.open_agents = p_open_agents AND c.unattributed_n = p_unattributed_n
        AND c.unattributed_ids = p_unattributed_ids;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- The close's time was taken before its read: a touch that committed
    -- since (a remember in the session) is not moved back.
    UPDATE sessions s SET status = p_status, ended_at = p_ended_at,
        last_activity_at = GREATEST(s.last_activity_at, p_last_activity_at),
        summary = p_summary, next_focus = p_next_focus,
        nothing_to_capture_reason = p_nothing_reason, focus_outcome = p_focus_outcome,
        abandon_reason = p_abandon_reason, close_digest = p_close_digest,
        close_result = p_close_result, next_focus_revision = p_next_focus_revision
        WHERE s.tenant_id = p_tenant AND s.session_id = p_session;
    IF p_body IS NOT NULL THEN
        -- The body is the history row written below: the focus row names it.
        UPDATE focus_bodies f SET body = NULL, revision = p_found + 1, updated_at = p_body_at,
            updated_by_session = p_session
            WHERE f.tenant_id = p_tenant AND f.project = p_project AND f.slot = slot_key;
    END IF;
    -- brain_place_receipt's statements and brain_receipt_hash's expression.
    SELECT h.seq + 1, h.hash INTO seq, prev_hash
        FROM receipt_heads h WHERE h.tenant_id = p_tenant FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tenant has no ledger tip';
    END IF;
    hash := encode(sha256(convert_to(
        p_before_prev || prev_hash || p_before_seq || seq::text || p_after_seq, 'UTF8')), 'hex');
    INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id,
        credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest,
        prev_hash, hash)
    VALUES (p_tenant, seq, p_receipt_id, p_at, p_tool, p_project, p_session,
        p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
        p_digest, prev_hash, hash);
    UPDATE receipt_heads h SET seq = brain_end.seq, hash = brain_end.hash
        WHERE h.tenant_id = p_tenant;
    IF p_body IS NOT NULL THEN
        INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id,
            receipt_seq, created_at)
        VALUES (p_tenant, p_project, slot_key, p_found + 1, p_body, p_session, seq, p_body_at);
    END IF;
    RETURN NEXT;
END
$$;

-- brain_end as the builds before migration 0035 call it: the session keeps
-- its next_focus itself.
CREATE OR REPLACE FUNCTION brain_end(
    p_tenant text, p_session uuid, p_bound_slot text, p_read_revision bigint, p_found bigint,
    p_until timestamptz, p_open_agents bigint, p_unattributed_n bigint, p_unattributed_ids uuid[],
    p_status text, p_ended_at timestamptz, p_last_activity_at timestamptz, p_summary text,
    p_next_focus text, p_nothing_reason text, p_focus_outcome text, p_abandon_reason text,
    p_close_digest text, p_close_result jsonb,
    p_project text, p_body text, p_body_at timestamptz, p_change text,
    p_receipt_id uuid, p_at timestamptz, p_tool text,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
RETURNS SETOF record LANGUAGE sql AS $$
    SELECT e.seq, e.prev_hash, e.hash FROM brain_end(p_tenant, p_session,
        p_bound_slot, p_read_revision, p_found, p_until, p_open_agents, p_unattributed_n,
        p_unattributed_ids, p_status, p_ended_at, p_last_activity_at, p_summary, p_next_focus,
        p_nothing_reason, p_focus_outcome, p_abandon_reason, p_close_digest, p_close_result,
        p_project, p_body, p_body_at, p_change, p_receipt_id, p_at, p_tool, p_credential_kind,
        p_subject, p_token_id, p_connection_id, p_elevated, p_outcome, p_digest, p_before_prev,
        p_before_seq, p_after_seq, NULL::bigint) e
$$;

-- A relay in one call: brain_end's close (the relay's status, answer and
-- receipt), and, only when that wrote, the session the relay opens for its
-- receiver. p_next is that session's row (brain's sessions columns, as
-- session_insert names them), started on the base revision
-- brain_peek_close read: a plain read, as the locked relay's is, since a
-- relay does not hold the base focus. NULL when the relay opens no session.
CREATE OR REPLACE FUNCTION brain_relay(p_next jsonb,
    p_tenant text, p_session uuid, p_bound_slot text, p_read_revision bigint, p_found bigint,
    p_until timestamptz, p_open_agents bigint, p_unattributed_n bigint, p_unattributed_ids uuid[],
    p_status text, p_ended_at timestamptz, p_last_activity_at timestamptz, p_summary text,
    p_next_focus text, p_nothing_reason text, p_focus_outcome text, p_abandon_reason text,
    p_close_digest text, p_close_result jsonb,
    p_project text, p_body text, p_body_at timestamptz, p_change text,
    p_receipt_id uuid, p_at timestamptz, p_tool text,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text, p_next_focus_revision bigint,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY SELECT e.seq, e.prev_hash, e.hash FROM brain_end(p_tenant, p_session,
        p_bound_slot, p_read_revision, p_found, p_until, p_open_agents, p_unattributed_n,
        p_unattributed_ids, p_status, p_ended_at, p_last_activity_at, p_summary, p_next_focus,
        p_nothing_reason, p_focus_outcome, p_abandon_reason, p_close_digest, p_close_result,
        p_project, p_body, p_body_at, p_change, p_receipt_id, p_at, p_tool, p_credential_kind,
        p_subject, p_token_id, p_connection_id, p_elevated, p_outcome, p_digest, p_before_prev,
        p_before_seq, p_after_seq, p_next_focus_revision) e;
    IF FOUND AND p_next IS NOT NULL THEN
        INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, bound_slot,
            started_focus_revision, status, opened_at, last_activity_at, opened_by_kind,
            opened_by_subject, opened_by_role, opened_by_credential, read_revision, relayed_from)
        SELECT p_tenant, n.session_id, p_project, n.client_key, n.kind, n.bound_slot,
            n.started_focus_revision, n.status, n.opened_at, n.last_activity_at, n.opened_by_kind,
            n.opened_by_subject, n.opened_by_role, n.opened_by_credential, n.read_revision,
            p_session
          FROM jsonb_populate_record(NULL::sessions, p_next) n;
    END IF;
END
$$;

-- brain_relay as the builds before migration 0035 call it.
CREATE OR REPLACE FUNCTION brain_relay(p_next jsonb,
    p_tenant text, p_session uuid, p_bound_slot text, p_read_revision bigint, p_found bigint,
    p_until timestamptz, p_open_agents bigint, p_unattributed_n bigint, p_unattributed_ids uuid[],
    p_status text, p_ended_at timestamptz, p_last_activity_at timestamptz, p_summary text,
    p_next_focus text, p_nothing_reason text, p_focus_outcome text, p_abandon_reason text,
    p_close_digest text, p_close_result jsonb,
    p_project text, p_body text, p_body_at timestamptz, p_change text,
    p_receipt_id uuid, p_at timestamptz, p_tool text,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
RETURNS SETOF record LANGUAGE sql AS $$
    SELECT r.seq, r.prev_hash, r.hash FROM brain_relay(p_next, p_tenant, p_session,
        p_bound_slot, p_read_revision, p_found, p_until, p_open_agents, p_unattributed_n,
        p_unattributed_ids, p_status, p_ended_at, p_last_activity_at, p_summary, p_next_focus,
        p_nothing_reason, p_focus_outcome, p_abandon_reason, p_close_digest, p_close_result,
        p_project, p_body, p_body_at, p_change, p_receipt_id, p_at, p_tool, p_credential_kind,
        p_subject, p_token_id, p_connection_id, p_elevated, p_outcome, p_digest, p_before_prev,
        p_before_seq, p_after_seq, NULL::bigint) r
$$;

-- Announce applied ends to every replica's resource subscribers (channel
-- brain_focus), after their commits: a NOTIFY in an end's own transaction
-- would hold the cluster-wide lock NOTIFY takes at commit through that
-- commit's WAL flush. This transaction writes nothing worth a flush, so its
-- commit does not wait for one.
CREATE OR REPLACE FUNCTION brain_announce(p_changes text[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_notify('brain_focus', c) FROM unnest(p_changes) AS c;
END
$$;

-- ========================================================================
-- Reads that lock
-- ========================================================================

-- brain_focus_get's read in one round trip. Row-level security needs the
-- tenant set in the reading transaction (set_config(.., true)); from the
-- client that was BEGIN + the query + COMMIT, three round trips for one read.
-- This function sets it and runs the query inside the one statement's own
-- transaction. SECURITY INVOKER (the default): the policies of the calling
-- role apply, and the query filters on the tenant as well.
CREATE OR REPLACE FUNCTION brain_focus_with_slots(p_tenant text, p_project text)
RETURNS TABLE (slot text, body text, revision bigint, updated_at timestamptz, updated_by_session uuid)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    RETURN QUERY
        SELECT f.slot, CASE WHEN f.slot = '' THEN COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = f.tenant_id
                   AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision),
                   f.body) ELSE '' END, f.revision,
               f.updated_at, f.updated_by_session
        FROM focus_bodies f WHERE f.tenant_id = p_tenant AND f.project = p_project
        ORDER BY f.slot LIMIT 201;
END
$$;

-- Mark a project's focus rows watched for p_seconds: until then every update
-- of them is announced on brain_focus_changed (the trigger
-- focus_bodies_changed announces an update of a row whose watched_until had
-- not passed a minute before the updating transaction began). A replica calls
-- it before the database read whose answer it means to remember, in a
-- statement and transaction of its own (its row locks held only for it), and
-- remembers that answer for at most the milliseconds this answers (counted
-- on the database's clock now, and by the replica from before it sent the
-- call), so its memory lets go of the project before the rows stop being
-- announced; NULL: do not remember. Rows with less than half of p_seconds
-- left are marked again, and locked without waiting: an end holding one when
-- this runs may commit unannounced after the read that follows, so then it
-- answers NULL (waiting instead could deadlock with a locking end). An end
-- that locks a row after this finds it watched, and is heard. Rows nobody
-- reads stop being announced once their time is past, and their ends then
-- take no NOTIFY (a transaction that NOTIFYs holds a lock of the whole
-- cluster through its commit's flush).
--
-- Bounded: a project of more than 256 rows is not marked (NULL), so a read
-- writes at most 256 rows, once per half of p_seconds; the rows are locked
-- and updated by their ctid, one pass each. The lock is its own statement:
-- locking a row an end updated and committed after the statement's snapshot
-- returns the row's newest version, which only a later statement's snapshot
-- sees; and every row locked must be marked, or the answer is NULL. The mark
-- commits without waiting for its flush: a mark lost in a crash is one the
-- replicas no longer count on, since a crash takes their listeners, and a replica whose listener is
-- lost forgets everything. A project with no rows yet is remembered (its
-- rows' inserts are always announced). SECURITY INVOKER: the caller's
-- policies, the tenant set here.
CREATE OR REPLACE FUNCTION brain_focus_watch(p_tenant text, p_project text, p_seconds bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    rows_there bigint;
    locked tid[];
    marked bigint;
    least_until timestamptz;
    unmarked boolean;
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT count(*) INTO rows_there FROM (SELECT 1 FROM focus_bodies f
        WHERE f.tenant_id = p_tenant AND f.project = p_project LIMIT 257) counted;
    IF rows_there > 256 THEN
        RETURN NULL;
    END IF;
    locked := ARRAY(
        SELECT d.ctid FROM focus_bodies d
         WHERE d.tenant_id = p_tenant AND d.project = p_project
           AND (d.watched_until IS NULL
                OR d.watched_until < now() + make_interval(secs => p_seconds / 2.0))
           FOR NO KEY UPDATE NOWAIT);
    UPDATE focus_bodies f SET watched_until = now() + make_interval(secs => p_seconds)
     WHERE f.ctid = ANY (locked);
    GET DIAGNOSTICS marked = ROW_COUNT;
    IF marked <> cardinality(locked) THEN
        RETURN NULL;
    END IF;
    -- A row never marked (one committed after the lock's snapshot) may not
    -- be announced: nothing may be remembered.
    SELECT min(f.watched_until), bool_or(f.watched_until IS NULL)
      INTO least_until, unmarked FROM focus_bodies f
     WHERE f.tenant_id = p_tenant AND f.project = p_project;
    IF unmarked THEN
        RETURN NULL;
    END IF;
    RETURN GREATEST(0, COALESCE(
        floor(extract(epoch FROM least_until - clock_timestamp()) * 1000)::bigint,
        p_seconds * 1000));
EXCEPTION WHEN lock_not_available THEN
    RETURN NULL;
END
$$;

-- The mark as replicas of the build before migration 0031 ask for it (their
-- memory keeps what it reads until it hears a change): an hour, the time
-- docs/deploy.md gives a roll across 0031 to finish in.
CREATE OR REPLACE FUNCTION brain_focus_watch(p_tenant text, p_project text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT COALESCE(brain_focus_watch(p_tenant, p_project, 3600) > 0, false)
$$;

CREATE OR REPLACE FUNCTION brain_lock_close(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb,
    body text, revision bigint, updated_at timestamptz, updated_by_session uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM sessions s JOIN focus_bodies f ON f.tenant_id = s.tenant_id
               AND f.project = s.project AND f.slot = COALESCE(s.bound_slot, '')
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session
           FOR UPDATE OF s, f;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- Read in a statement of its own: a locking read that waited sees the
    -- locked rows as the holder committed them, but other tables as of its
    -- start, without the history row (the body) that holder wrote.
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.read_revision, s.relayed_from, s.status,
               s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, CASE WHEN s.next_focus_revision IS NULL THEN s.next_focus
                    ELSE (SELECT h.body FROM focus_history h WHERE h.tenant_id = s.tenant_id
                    AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '')
                    AND h.revision = s.next_focus_revision) END, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result,
               COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = f.tenant_id
                   AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision),
                   f.body), f.revision, f.updated_at, f.updated_by_session
          FROM sessions s JOIN focus_bodies f ON f.tenant_id = s.tenant_id
               AND f.project = s.project AND f.slot = COALESCE(s.bound_slot, '')
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session;
END
$$;

-- What a close's answer counts (brain_core's close_counts): the project's
-- open agent sessions, this one included, and its artifacts of no session
-- created in [p_since, p_until], the first 20 by time. The sessions are
-- counted up to 1,001, so the others the answer names stop at 1,000, as the
-- briefing's counts do; the artifacts up to 1,000. The locked end reads
-- it once its locks are held (tx/closing.rs), the one-call end with its read
-- (brain_peek_close). One SELECT, so PostgreSQL inlines it into the caller.
-- The artifacts are counted in artifacts_unattributed's order: a plan that
-- reads them otherwise (a sequential scan of every tenant's artifacts, a
-- bitmap of all of them) cannot stop at the limit.
CREATE OR REPLACE FUNCTION brain_close_counts(p_tenant text, p_project text,
    p_since timestamptz, p_until timestamptz)
RETURNS TABLE (open_agents bigint, unattributed_n bigint, unattributed_ids uuid[])
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*) FROM (SELECT 1 FROM sessions o WHERE o.tenant_id = p_tenant
              AND o.project = p_project AND o.status = 'open' AND o.kind = 'agent'
              LIMIT 1001) counted),
           (SELECT count(*) FROM (SELECT 1 FROM artifacts a WHERE a.tenant_id = p_tenant
              AND a.project = p_project AND a.session_id IS NULL
              AND a.created_at >= p_since AND a.created_at <= p_until
              ORDER BY a.created_at, a.artifact_id LIMIT 1000) counted),
           ARRAY(SELECT a.artifact_id FROM artifacts a WHERE a.tenant_id = p_tenant
              AND a.project = p_project AND a.session_id IS NULL
              AND a.created_at >= p_since AND a.created_at <= p_until
              ORDER BY a.created_at, a.artifact_id LIMIT 20)
$$;

-- brain_lock_close's row without its locks, with what the close's answer
-- counts as of p_until (brain_close_counts) and the base focus's revision
-- (the one a relay's receiver starts on), for an end or a relay that is
-- decided on it and written in one call (brain_end, brain_relay). One
-- statement in its own transaction, which it scopes to the tenant.
CREATE OR REPLACE FUNCTION brain_peek_close(p_tenant text, p_session uuid, p_until timestamptz)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb,
    body text, revision bigint, updated_at timestamptz, updated_by_session uuid,
    open_agents bigint, unattributed_n bigint, unattributed_ids uuid[], base_revision bigint)
LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.read_revision, s.relayed_from, s.status,
               s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, CASE WHEN s.next_focus_revision IS NULL THEN s.next_focus
                    ELSE (SELECT h.body FROM focus_history h WHERE h.tenant_id = s.tenant_id
                    AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '')
                    AND h.revision = s.next_focus_revision) END, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result,
               COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = f.tenant_id
                   AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision),
                   f.body), f.revision, f.updated_at, f.updated_by_session,
               c.open_agents, c.unattributed_n, c.unattributed_ids,
               CASE WHEN s.bound_slot IS NULL THEN f.revision
                    ELSE COALESCE((SELECT b.revision FROM focus_bodies b
                        WHERE b.tenant_id = p_tenant AND b.project = s.project AND b.slot = ''), 0)
               END
          FROM sessions s JOIN focus_bodies f ON f.tenant_id = s.tenant_id
               AND f.project = s.project AND f.slot = COALESCE(s.bound_slot, '')
         CROSS JOIN LATERAL brain_close_counts(p_tenant, s.project, s.opened_at, p_until) c
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session;
END
$$;

CREATE OR REPLACE FUNCTION brain_lock_session(p_tenant text, p_session uuid)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM sessions s WHERE s.tenant_id = p_tenant AND s.session_id = p_session
        FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    -- Its own statement, as in brain_lock_close: the next_focus a close that
    -- held the lock moved to its history row is read with that row.
    RETURN QUERY
        SELECT s.session_id, s.project, s.client_key, s.kind, s.bound_slot,
               s.started_focus_revision, s.read_revision, s.relayed_from, s.status,
               s.opened_at, s.last_activity_at,
               s.ended_at, s.summary, CASE WHEN s.next_focus_revision IS NULL THEN s.next_focus
                    ELSE (SELECT h.body FROM focus_history h WHERE h.tenant_id = s.tenant_id
                    AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '')
                    AND h.revision = s.next_focus_revision) END, s.nothing_to_capture_reason,
               s.focus_outcome, s.abandon_reason, s.opened_by_kind, s.opened_by_subject,
               s.opened_by_role, s.opened_by_credential, s.close_digest, s.close_result
          FROM sessions s
         WHERE s.tenant_id = p_tenant AND s.session_id = p_session;
END
$$;

-- A focus row locked for the transaction, its body read as brain reads it,
-- in a statement after the lock's, as in brain_lock_close. The caller has set brain.tenant.
CREATE OR REPLACE FUNCTION brain_lock_focus(p_tenant text, p_project text, p_slot text)
RETURNS TABLE (body text, revision bigint, updated_at timestamptz, updated_by_session uuid)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM focus_bodies f
        WHERE f.tenant_id = p_tenant AND f.project = p_project AND f.slot = p_slot
        FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = f.tenant_id
                   AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision),
                   f.body), f.revision, f.updated_at, f.updated_by_session
          FROM focus_bodies f
         WHERE f.tenant_id = p_tenant AND f.project = p_project AND f.slot = p_slot;
END
$$;

-- ========================================================================
-- Triggers: change notices, caps and usage
-- ========================================================================

-- Every change to a project's focus rows that some replica may remember is
-- announced on the channel brain_focus_changed, in the changing transaction,
-- so each replica's memory of focus reads (brain_core::focus_cache) forgets
-- the project when the change commits, whichever statement, function or
-- replica made it: every insert and delete, every update that moves a row
-- to another project or slot, and since migration 0029 the other updates of
-- rows marked watched (brain_focus_watch; since 0031 until a time), which a
-- replica marks before it remembers a read, and changing what a read answers.
-- An update that moves a row announces both projects. A NOTIFY makes its transaction's commit take
-- a lock of the whole database cluster through the commit's WAL flush, so
-- announcing updates nobody remembers made every end on any tenant commit
-- one at a time. NOTIFY is delivered only on commit and in commit order, and
-- identical payloads of one transaction are sent once. The payload is the
-- JSON array [tenant_id, project].
CREATE OR REPLACE FUNCTION brain_focus_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    r focus_bodies;
BEGIN
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    PERFORM pg_notify('brain_focus_changed', json_build_array(r.tenant_id, r.project)::text);
    -- A row moved to another project (by hand: brain never moves one) changes both.
    IF TG_OP = 'UPDATE' AND (OLD.tenant_id, OLD.project) IS DISTINCT FROM (NEW.tenant_id, NEW.project) THEN
        PERFORM pg_notify('brain_focus_changed', json_build_array(OLD.tenant_id, OLD.project)::text);
    END IF;
    RETURN NULL;
END
$$;

-- TRUNCATE fires no row trigger: announce it to every replica as a change of
-- everything (an empty array).
CREATE OR REPLACE FUNCTION brain_focus_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('brain_focus_changed', '[]');
    RETURN NULL;
END
$$;

-- A tenant holds at most 10,000 projects. A project is created by the first
-- write that names it, from any of the paths that write (starts, remembers,
-- documents), so the bound is kept where they all meet: an insert into
-- projects. An insert of a project that exists (the writes' ON CONFLICT DO
-- NOTHING) is never refused, nor one of the server's own (_mcp for connections'
-- tracers, _runtime for raw sessions), which do not count. Two creations racing at the bound can both pass
-- it: the overshoot is at most the writers in flight.
CREATE OR REPLACE FUNCTION brain_project_cap() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION brain_use(t text, n bigint, refusable boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    used bigint;
    quota bigint;
BEGIN
    IF n = 0 THEN
        RETURN;
    END IF;
    -- Counted at COMMIT (0019): the rows a tenant's deletion removed are
    -- counted after it removed the tenant and its usage row, and leave none.
    IF n < 0 AND NOT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = t) THEN
        RETURN;
    END IF;
    INSERT INTO tenant_usage AS u (tenant_id, bytes) VALUES (t, n)
        ON CONFLICT (tenant_id) DO UPDATE SET bytes = u.bytes + n
        RETURNING u.bytes INTO used;
    IF refusable AND n > 0 THEN
        SELECT value INTO quota FROM brain_limits WHERE name = 'tenant_quota_bytes';
        IF quota > 0 AND used > quota THEN
            RAISE EXCEPTION 'brain_quota_exceeded: usage=% quota=% write=%', used - n, quota, n
                USING ERRCODE = '53400';
        END IF;
    END IF;
END $$;

CREATE OR REPLACE FUNCTION brain_usage_artifacts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.text) + coalesce(octet_length(array_to_string(OLD.tags, '')), 0)
            + coalesce(octet_length(OLD.ack_note), 0);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.text) + coalesce(octet_length(array_to_string(NEW.tags, '')), 0)
            + coalesce(octet_length(NEW.ack_note), 0);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, TG_OP = 'INSERT');
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION brain_usage_focus() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM brain_use(NEW.tenant_id, octet_length(NEW.body), true);
    ELSE
        PERFORM brain_use(OLD.tenant_id, -octet_length(OLD.body), false);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION brain_usage_documents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.name) + octet_length(OLD.body);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.name) + octet_length(NEW.body);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, true);
    RETURN NULL;
END $$;

-- A session's texts (migration 0041). Past the tenant's quota a close still
-- closes (an end that leaves the focus as it is, an abandon), but only if it
-- stores no next_focus text of its own (an unchanged end names the body's
-- revision instead: brain_core::flow::StoredNextFocus) and at most 1 KiB of
-- summary and reasons: a close that stores more is refused like a new body,
-- so a tenant past its quota cannot grow by a body per start and end. Below
-- the quota every close is counted and stored as it comes.
CREATE OR REPLACE FUNCTION brain_usage_sessions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
    own_focus_before bigint := 0;
    own_focus bigint := 0;
    notes bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        own_focus_before := coalesce(octet_length(OLD.next_focus), 0);
        before := coalesce(octet_length(OLD.summary), 0) + own_focus_before
            + coalesce(octet_length(OLD.nothing_to_capture_reason), 0)
            + coalesce(octet_length(OLD.abandon_reason), 0);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        own_focus := coalesce(octet_length(NEW.next_focus), 0);
        notes := coalesce(octet_length(NEW.summary), 0)
            + coalesce(octet_length(NEW.nothing_to_capture_reason), 0)
            + coalesce(octet_length(NEW.abandon_reason), 0);
        after := notes + own_focus;
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before,
        own_focus > own_focus_before OR notes > 1024);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION brain_usage_briefs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before bigint := 0;
    after bigint := 0;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before := octet_length(OLD.body);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after := octet_length(NEW.body);
    END IF;
    PERFORM brain_use(coalesce(NEW.tenant_id, OLD.tenant_id), after - before, false);
    RETURN NULL;
END $$;

-- The statements that open a session from Rust (relay's receiver, a
-- connection's tracer) pass read_revision. A start opens its session inside
-- brain_start, which does not name the column: this trigger reads it there, from the row the start's answer shows.
-- STABLE, so its query sees the inserting statement's snapshot, which is the
-- one that statement's answer is read from; a slot the same statement
-- created is not in it and reads as revision 0, which it is.
CREATE OR REPLACE FUNCTION brain_session_read_revision() RETURNS trigger
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NEW.bound_slot IS NULL THEN
        NEW.read_revision := NEW.started_focus_revision;
    ELSE
        NEW.read_revision := COALESCE((SELECT f.revision FROM focus_bodies f
            WHERE f.tenant_id = NEW.tenant_id AND f.project = NEW.project
              AND f.slot = NEW.bound_slot), 0);
    END IF;
    RETURN NEW;
END
$$;

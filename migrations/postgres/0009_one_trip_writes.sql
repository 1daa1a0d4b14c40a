-- Writes in one round trip (issue 11). A write that needs no decision between
-- its reads and its writes runs as one function call in its own statement's
-- transaction: no BEGIN, no COMMIT from the client, and the tenant's ledger
-- tip is locked inside it, last, and released by the commit that follows at
-- once on the server (no client round trip while it is held).
--
-- Each function sets brain.tenant transaction-locally first, so row-level
-- security (0005) applies to every statement in it, and every statement names
-- its tenant as well. SECURITY INVOKER (the default): the caller's policies.
-- The statements are those of brain-store-postgres's sql.rs / ledger.rs /
-- lifecycle.rs for the same writes; tests/one_trip.rs holds the two forms to
-- the same answers and rows.

-- A receipt's hash: sha256 of its canonical text, the three pieces
-- brain_core::receipt::Receipt::frame builds around prev_hash and seq. brain
-- serve checks it against brain-core's own hashing with a fixed receipt
-- before it serves (PgStore::receipt_hash_agrees).
CREATE FUNCTION brain_receipt_hash(p_before_prev text, p_prev_hash text, p_before_seq text,
    p_seq bigint, p_after_seq text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT encode(sha256(convert_to(
        p_before_prev || p_prev_hash || p_before_seq || p_seq::text || p_after_seq, 'UTF8')), 'hex')
$$;

-- The receipt after the tenant's tip: lock the tip, hash the receipt's
-- canonical text with it (brain_core::receipt::Receipt::frame's pieces
-- p_before_prev, p_before_seq, p_after_seq around prev_hash and seq), write the
-- receipt and the new tip. The caller has set brain.tenant.
CREATE FUNCTION brain_place_receipt(
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

-- Tenant $1 with its ledger tip (genesis hash p_genesis) and project p_project
-- with its empty base focus, when missing (ledger::ENSURE_PROJECT). Each row
-- is looked for first: an INSERT … ON CONFLICT that meets a row another
-- transaction is updating waits for that transaction to end, and the ledger
-- tip and the base focus are updated by every write of the tenant, so a start
-- would queue behind the tip's holder from its first statement on. A plain
-- read does not wait; the INSERT only runs for a row not there yet.
CREATE FUNCTION brain_ensure_project(p_tenant text, p_genesis text, p_project text,
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

-- brain_remember without a session: the project when p_ensure, the artifact,
-- its receipt. Returns the receipt's place.
CREATE FUNCTION brain_remember(
    p_tenant text, p_ensure boolean, p_genesis text,
    p_artifact_id uuid, p_project text, p_kind text, p_text text, p_tags text[],
    p_created_at timestamptz,
    p_receipt_id uuid, p_at timestamptz, p_tool text, p_session uuid,
    p_credential_kind text, p_subject text, p_token_id text, p_connection_id text,
    p_elevated boolean, p_outcome text, p_digest text,
    p_before_prev text, p_before_seq text, p_after_seq text,
    OUT seq bigint, OUT prev_hash text, OUT hash text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    IF p_ensure THEN
        PERFORM brain_ensure_project(p_tenant, p_genesis, p_project, p_created_at);
    END IF;
    INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, text, tags,
        created_at)
    VALUES (p_tenant, p_artifact_id, p_project, NULL, p_kind, p_text, p_tags, p_created_at);
    SELECT r.seq, r.prev_hash, r.hash INTO seq, prev_hash, hash
        FROM brain_place_receipt(p_tenant, p_receipt_id, p_at, p_tool, p_project, p_session,
            p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
            p_digest, p_before_prev, p_before_seq, p_after_seq) r;
END
$$;

-- Everything a session's briefing reads but its mission recall, one row per
-- item, told apart by `part` (brain-store-postgres's lifecycle::sources_from
-- reads them): the base focus, the client's other open session with its ledger
-- size, the project's documents, its latest daily brief, its open todos and
-- open sessions counted, its last five closed sessions. Run by brain_start
-- and by a resume; the caller has set brain.tenant.
CREATE FUNCTION brain_briefing_sources(p_tenant text, p_project text, p_client_key text,
    p_session uuid)
RETURNS TABLE (part text, ord bigint, k text, name text, txt text, n bigint,
    t1 timestamptz, t2 timestamptz, id uuid)
LANGUAGE plpgsql AS $$
BEGIN
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
END
$$;

-- brain_session_start in one round trip: open the session (its tenant,
-- project and bound slot created when missing, at the base focus revision as
-- it stands), read everything its briefing reads but the mission recall, then
-- place the receipt. The briefing is read before the tip is locked: the only
-- lock held while it reads is the new session's own row, which nobody waits on.
-- Rows are brain_briefing_sources', plus part
-- 'opened' (n = started_focus_revision; the bound slot's body, revision,
-- updated_at and updated_by_session in txt, ord, t1 and id, ord NULL when the
-- slot is new) and part 'receipt' (n = seq, k = prev_hash, name = hash).
CREATE FUNCTION brain_start(
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
BEGIN
    PERFORM set_config('brain.tenant', p_tenant, true);
    PERFORM brain_ensure_project(p_tenant, p_genesis, p_project, p_opened_at);
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
    RETURN QUERY SELECT * FROM brain_briefing_sources(p_tenant, p_project, p_client_key, p_session);
    RETURN QUERY SELECT 'receipt'::text, 0::bigint, r.prev_hash, r.hash, NULL::text, r.seq,
            NULL::timestamptz, NULL::timestamptz, NULL::uuid
        FROM brain_place_receipt(p_tenant, p_receipt_id, p_at, p_tool, p_project, p_session,
            p_credential_kind, p_subject, p_token_id, p_connection_id, p_elevated, p_outcome,
            p_digest, p_before_prev, p_before_seq, p_after_seq) r;
END
$$;

-- The receipt a write transaction left in brain.receipt (a JSON object:
-- brain-store-postgres's ledger::pending), placed after the tenant's tip with
-- the focus history row it names, if any: that row's body is the one this
-- transaction wrote to focus_bodies at that revision. It takes no parameters,
-- so the client sends it with the COMMIT in one message: the tip is locked
-- here and released by that commit, with no round trip to the client in
-- between. Only the transaction's own tenant's receipt is placed, whatever
-- scope or role runs it.
CREATE FUNCTION brain_place_pending(OUT seq bigint, OUT prev_hash text, OUT hash text)
LANGUAGE plpgsql AS $$
DECLARE
    p jsonb := NULLIF(current_setting('brain.receipt', true), '')::jsonb;
BEGIN
    IF p IS NULL THEN
        RAISE EXCEPTION 'no receipt pending';
    END IF;
    IF p->>'tenant' IS DISTINCT FROM NULLIF(current_setting('brain.tenant', true), '') THEN
        RAISE EXCEPTION 'a pending receipt of another tenant';
    END IF;
    SELECT r.seq, r.prev_hash, r.hash INTO seq, prev_hash, hash
        FROM brain_place_receipt(p->>'tenant', (p->>'receipt_id')::uuid,
            (p->>'at')::timestamptz, p->>'tool', p->>'project', (p->>'session_id')::uuid,
            p->>'credential_kind', p->>'subject', p->>'token_id', p->>'connection_id',
            (p->>'elevated')::boolean, p->>'outcome', p->>'request_digest',
            p->>'before_prev', p->>'before_seq', p->>'after_seq') r;
    IF p ? 'history' THEN
        INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id,
            receipt_seq, created_at)
        SELECT f.tenant_id, f.project, f.slot, f.revision, f.body,
            (p#>>'{history,session_id}')::uuid, seq, (p#>>'{history,at}')::timestamptz
        FROM focus_bodies f
        WHERE f.tenant_id = p->>'tenant' AND f.project = p#>>'{history,project}'
          AND f.slot = p#>>'{history,slot}' AND f.revision = (p#>>'{history,revision}')::bigint;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the focus body the receipt names was not written';
        END IF;
    END IF;
    PERFORM set_config('brain.receipt', '', true);
END
$$;

-- sessions_by_client (0001) served one read, a client's other open session,
-- which sessions_open_agents (0007) now holds exactly; every start inserted
-- into it and every close's status change added an entry to it as well.
DROP INDEX sessions_by_client;

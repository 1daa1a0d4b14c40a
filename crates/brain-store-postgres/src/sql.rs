//! The statements `brain_store_sqlx::sql` runs, in PostgreSQL's dialect. Their
//! parameters and columns are documented on `brain_store_sqlx::sql::Sql`.

use brain_store_sqlx::sql::Sql;
use brain_store_sqlx::{
    artifact_columns, elevation_columns, focus_body, planned_per_call, receipt_columns,
    session_columns, token_columns,
};

/// A project's agent sessions newest first past the cursor ($4, $5), of
/// status $3 when given, then `$more`: one index scan per status
/// (sessions_by_project_status, in this order) of at most `$limit` rows,
/// merged; a status other than $3 leaves its branch unread. Each branch's
/// own LIMIT keeps PostgreSQL reading the index in order: without it, a
/// status with few rows was planned as a bitmap scan of all of them and a
/// sort (70-125 ms at 200,000 sessions, a review measured).
macro_rules! pg_sessions_newest_first {
    ($limit:literal, $more:literal) => {
        concat!(
            pg_sessions_newest_first!("open", $limit, $more),
            " UNION ALL ",
            pg_sessions_newest_first!("ended", $limit, $more),
            " UNION ALL ",
            pg_sessions_newest_first!("conflicted", $limit, $more),
            " UNION ALL ",
            pg_sessions_newest_first!("relayed", $limit, $more),
            " UNION ALL ",
            pg_sessions_newest_first!("abandoned", $limit, $more),
            " ORDER BY opened_at DESC, session_id DESC"
        )
    };
    ($status:literal, $limit:literal, $more:literal) => {
        concat!(
            "(SELECT * FROM sessions WHERE tenant_id = $1 AND project = $2 AND status = '",
            $status,
            "' AND ($3::text IS NULL OR $3 = '",
            $status,
            "') AND kind = 'agent' AND opened_at <= coalesce($4::timestamptz, 'infinity') \
             AND ($4::timestamptz IS NULL OR (opened_at, session_id) < ($4, $5))",
            $more,
            " ORDER BY opened_at DESC, session_id DESC LIMIT ",
            $limit,
            ")"
        )
    };
}

/// A session list's columns, over `s`.
macro_rules! pg_session_list_columns {
    () => {
        concat!(
            "SELECT ",
            session_columns!(),
            ", (SELECT count(*) FROM (SELECT 1 FROM artifacts a WHERE a.tenant_id = s.tenant_id \
               AND a.session_id = s.session_id LIMIT 1000) counted) AS ledger_size FROM ("
        )
    };
}

pub(crate) static SQL: Sql = Sql {
    // FOR SHARE, here and in connection_owner: a revoke (or a connection's
    // close) that commits while the write that read the row runs would
    // otherwise land on the ledger before a write it no longer allows.
    // Locked, the revoke waits for that write, or the write waits for the
    // revoke and reads the row as revoked.
    elevation_active: "SELECT EXISTS (SELECT 1 FROM elevations e WHERE tenant_id = $1 \
        AND credential_id = $2 AND revoked_at IS NULL AND expires_at > $3 \
        AND (e.connection_id IS NULL OR NOT EXISTS (SELECT 1 FROM mcp_connections c \
             WHERE c.tenant_id = e.tenant_id AND c.connection_id = e.connection_id \
             AND c.closed_at IS NOT NULL)) \
        AND ((connection_id IS NOT NULL AND connection_id = $4) \
             OR ($4::text IS NULL AND session_id = $5)) LIMIT 1 FOR SHARE) AS found",
    connection_owner: "SELECT credential_id, role, closed_at IS NOT NULL AS closed \
        FROM mcp_connections WHERE tenant_id = $1 AND connection_id = $2 FOR SHARE",
    elevation_insert: "INSERT INTO elevations (tenant_id, elevation_id, credential_id, subject, \
        connection_id, session_id, reason, granted_at, expires_at) \
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)",
    elevation_revoke: concat!(
        "UPDATE elevations SET revoked_at = COALESCE(revoked_at, $4) \
         WHERE tenant_id = $1 AND elevation_id = $2 AND credential_id = $3 RETURNING ",
        elevation_columns!()
    ),
    elevation_list: concat!(
        "SELECT ",
        elevation_columns!(),
        " FROM elevations e WHERE tenant_id = $1 AND credential_id = $2 \
         AND revoked_at IS NULL AND expires_at > $3 \
         AND (e.connection_id IS NULL OR NOT EXISTS (SELECT 1 FROM mcp_connections c \
             WHERE c.tenant_id = e.tenant_id AND c.connection_id = e.connection_id \
             AND c.closed_at IS NOT NULL)) ORDER BY granted_at"
    ),
    token_insert: "INSERT INTO shared_tokens (tenant_id, token_id, name, token_hash, created_at) \
        VALUES ($1,$2,$3,$4,$5) ON CONFLICT DO NOTHING",
    token_revoke: concat!(
        "UPDATE shared_tokens SET revoked_at = $3 WHERE tenant_id = $1 AND name = $2 \
         AND revoked_at IS NULL RETURNING ",
        token_columns!()
    ),
    token_list: concat!(
        "SELECT ",
        token_columns!(),
        " FROM shared_tokens WHERE tenant_id = $1 ORDER BY created_at"
    ),
    token_find: concat!(
        "SELECT tenant_id, ",
        token_columns!(),
        " FROM shared_tokens WHERE token_hash = $1 AND revoked_at IS NULL"
    ),
    token_exists: "SELECT EXISTS (SELECT 1 FROM shared_tokens WHERE revoked_at IS NULL) AS found",
    connection_insert: "INSERT INTO mcp_connections (tenant_id, connection_id, credential_kind, \
        credential_id, opened_at, last_seen_at, init_params, tracer_session_id, role) \
        VALUES ($1,$2,$3,$4,$5,$5,$6,$7,$8)",
    connection_get: "SELECT credential_kind, credential_id, role, closed_at, last_seen_at, \
        init_params, tracer_session_id FROM mcp_connections \
        WHERE tenant_id = $1 AND connection_id = $2",
    connection_touch: "UPDATE mcp_connections SET last_seen_at = $3 \
        WHERE tenant_id = $1 AND connection_id = $2 AND closed_at IS NULL",
    connection_close: "UPDATE mcp_connections SET closed_at = COALESCE(closed_at, $3) \
        WHERE tenant_id = $1 AND connection_id = $2 RETURNING tracer_session_id",
    connection_elevations_end: "UPDATE elevations SET revoked_at = $3 \
        WHERE tenant_id = $1 AND connection_id = $2 AND revoked_at IS NULL",
    tracer_close: "UPDATE sessions SET status = 'ended', ended_at = $3, last_activity_at = $3 \
        WHERE tenant_id = $1 AND session_id = $2 AND kind = 'tracer' AND status = 'open'",
    tenant_claim: "SELECT 1 FROM tenants WHERE tenant_id = $1 FOR NO KEY UPDATE",
    connection_open_count: "SELECT count(*) FILTER (WHERE credential_kind = $2 \
        AND credential_id = $3 AND role = $5) AS mine, count(*) AS total \
        FROM mcp_connections WHERE tenant_id = $1 AND closed_at IS NULL AND last_seen_at > $4",
    connection_expire: "UPDATE mcp_connections SET closed_at = $1 \
        WHERE closed_at IS NULL AND last_seen_at <= $2 \
        RETURNING tenant_id, connection_id, tracer_session_id",
    session_started_on: "SELECT session_id FROM ( \
        SELECT * FROM (SELECT session_id, at FROM (SELECT seq, at, session_id, connection_id, \
            tool, outcome FROM receipts WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 10000) newest \
          WHERE connection_id = $2 AND tool = 'brain_session_start' AND outcome = 'ok' \
          ORDER BY seq DESC LIMIT 1) found \
        UNION ALL SELECT started_session_id, started_at FROM mcp_connections \
          WHERE tenant_id = $1 AND connection_id = $2 AND started_session_id IS NOT NULL) \
        started ORDER BY at DESC LIMIT 1",
    connection_started: "UPDATE mcp_connections SET started_session_id = $3, started_at = $4 \
        WHERE tenant_id = $1 AND connection_id = $2 AND closed_at IS NULL",
    runtime_expire: "UPDATE sessions SET status = 'abandoned', ended_at = $1, \
        last_activity_at = $1, \
        abandon_reason = 'expired: no close within the runtime session lifetime' \
        WHERE project = $2 AND kind = 'agent' AND status = 'open' AND last_activity_at <= $3",
    session_get: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions s WHERE tenant_id = $1 AND session_id = $2"
    ),
    // Locked, then read in a statement of its own (brain_lock_session): the
    // columns read from other tables must see what the lock's holder wrote.
    session_lock: "SELECT * FROM brain_lock_session($1, $2)",
    focus_get: concat!(
        "SELECT ",
        focus_body!("f"),
        " AS body, revision, updated_at, updated_by_session FROM focus_bodies f \
         WHERE tenant_id = $1 AND project = $2 AND slot = $3"
    ),
    focus_lock: "SELECT * FROM brain_lock_focus($1, $2, $3)",
    session_insert: "INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, \
        bound_slot, started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, \
        opened_by_subject, opened_by_role, opened_by_credential, read_revision, relayed_from) \
        VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16)",
    // Counts a client can grow stop at brain_core::store::COUNTED_UP_TO.
    ledger_size: "SELECT count(*) AS n FROM (SELECT 1 FROM artifacts WHERE tenant_id = $1 \
        AND session_id = $2 LIMIT 1000) counted",
    open_agent_sessions: "SELECT count(*) AS n FROM (SELECT 1 FROM sessions \
        WHERE tenant_id = $1 AND project = $2 AND status = 'open' AND kind = 'agent' \
        LIMIT $3) counted",
    inbox_count: "SELECT count(*) AS n FROM (SELECT 1 FROM artifacts WHERE tenant_id = $1 \
        AND project = $2 AND kind = 'todo' AND acknowledged_at IS NULL LIMIT 1000) counted",
    session_bind: "UPDATE sessions SET bound_slot = $3, last_activity_at = $4, read_revision = $5 \
        WHERE tenant_id = $1 AND session_id = $2",
    session_touch: "UPDATE sessions SET last_activity_at = $3 \
        WHERE tenant_id = $1 AND session_id = $2",
    slot_ensure: "INSERT INTO focus_bodies (tenant_id, project, slot) VALUES ($1, $2, $3) \
        ON CONFLICT DO NOTHING",
    document_get: "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
        WHERE tenant_id = $1 AND project = $2 AND kind = $3 AND name = $4",
    document_lock: "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
        WHERE tenant_id = $1 AND project = $2 AND kind = $3 AND name = $4 FOR UPDATE",
    // FOR NO KEY UPDATE: the foreign-key checks of starts and remembers take
    // FOR KEY SHARE, which it does not wait on.
    project_claim: "SELECT 1 FROM projects WHERE tenant_id = $1 AND project = $2 \
        FOR NO KEY UPDATE",
    mental_model_count: "SELECT count(*) AS n FROM documents WHERE tenant_id = $1 \
        AND project = $2 AND kind = 'mental_model' AND revision > 0",
    document_write: "INSERT INTO documents (tenant_id, project, kind, name, body, revision, \
        updated_at, updated_by) VALUES ($1,$2,$3,$4,$5,$6,$7,$8) \
        ON CONFLICT (tenant_id, project, kind, name) DO UPDATE SET body = EXCLUDED.body, \
        revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at, \
        updated_by = EXCLUDED.updated_by WHERE documents.revision = EXCLUDED.revision - 1",
    focus_history: "SELECT revision, body, session_id, receipt_seq, created_at FROM focus_history \
        WHERE tenant_id = $1 AND project = $2 AND slot = $3 AND revision < $4 \
        ORDER BY revision DESC LIMIT $5",
    // Read status by status and merged, so a list without a status reads
    // its page, not every session of the project (80 ms at 220,000).
    session_list: concat!(
        planned_per_call!(),
        pg_session_list_columns!(),
        pg_sessions_newest_first!(
            "$6",
            " AND ($9::timestamptz IS NULL OR (opened_at, session_id) >= ($9, $10))"
        ),
        " LIMIT $6) s WHERE ($7::text IS NULL OR bound_slot = $7) \
         AND ($8::text IS NULL OR client_key = $8) \
         ORDER BY opened_at DESC, session_id DESC"
    ),
    // Slot and client_key filter within the window down to its oldest ($9,
    // $10, read first by session_list_window_end) or of the 10,000
    // (LISTING_WINDOW) newest past the cursor: a filter that matches little
    // read on through the project. The 20,000 is a bound on the read only:
    // the range holds 10,000 but for sessions opened between the two reads,
    // and cutting it at 10,000 skipped the window's oldest (a review raced
    // it).
    session_list_window: concat!(
        planned_per_call!(),
        pg_session_list_columns!(),
        pg_sessions_newest_first!(
            "20000",
            " AND ($9::timestamptz IS NULL OR (opened_at, session_id) >= ($9, $10))"
        ),
        " LIMIT 20000) s \
         WHERE ($7::text IS NULL OR bound_slot = $7) AND ($8::text IS NULL OR client_key = $8) \
         ORDER BY opened_at DESC, session_id DESC LIMIT $6"
    ),
    session_list_window_end: concat!(
        planned_per_call!(),
        "SELECT opened_at, session_id FROM (",
        pg_sessions_newest_first!("10000", ""),
        " OFFSET 9999 LIMIT 1) s"
    ),
    receipts_page: concat!(
        planned_per_call!(),
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = $1 AND seq > $2 \
         AND ($3::text IS NULL OR project = $3) AND ($4::uuid IS NULL OR session_id = $4) \
         AND seq < coalesce($6::bigint, 9223372036854775807) ORDER BY seq ASC LIMIT $5"
    ),
    receipts_page_newest_first: concat!(
        planned_per_call!(),
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = $1 AND seq > $2 \
         AND ($3::text IS NULL OR project = $3) AND ($4::uuid IS NULL OR session_id = $4) \
         AND seq < coalesce($6::bigint, 9223372036854775807) ORDER BY seq DESC LIMIT $5"
    ),
    receipts_all: concat!(
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = $1 ORDER BY seq"
    ),
    session_ledger: concat!(
        "SELECT ",
        artifact_columns!(),
        " FROM artifacts WHERE tenant_id = $1 AND session_id = $2 \
         ORDER BY created_at, artifact_id LIMIT $3"
    ),
    briefs_due: "SELECT p.tenant_id, p.project FROM projects p \
        WHERE NOT EXISTS (SELECT 1 FROM daily_briefs b WHERE b.tenant_id = p.tenant_id \
                            AND b.project = p.project AND b.day = $2::date) \
          AND (EXISTS (SELECT 1 FROM sessions s WHERE s.tenant_id = p.tenant_id \
                         AND s.project = p.project AND s.kind = 'agent' \
                         AND s.last_activity_at >= $1) \
            OR EXISTS (SELECT 1 FROM artifacts a WHERE a.tenant_id = p.tenant_id \
                         AND a.project = p.project AND a.created_at >= $1))",
    brief_insert: "INSERT INTO daily_briefs (tenant_id, project, day, body, generated_at) \
        VALUES ($1,$2,$3::date,$4,$5) ON CONFLICT DO NOTHING",
    // The count apart from the rows: a window count would read every row
    // of the day (and take each summary apart) before the LIMIT.
    activity_closed: "SELECT status, left(summary, 200) AS summary, \
        (SELECT count(*) FROM sessions WHERE tenant_id = $1 AND project = $2 \
         AND kind = 'agent' AND ended_at >= $3) AS n \
        FROM (SELECT status, summary, ended_at, session_id FROM sessions WHERE tenant_id = $1 \
        AND project = $2 AND kind = 'agent' AND ended_at >= $3 \
        ORDER BY ended_at DESC, session_id DESC LIMIT $4) last ORDER BY ended_at, session_id",
    activity_focus: "SELECT slot, revision, \
        (SELECT count(*) FROM focus_history WHERE tenant_id = $1 AND project = $2 \
         AND created_at >= $3) AS n \
        FROM (SELECT slot, revision, created_at FROM focus_history WHERE tenant_id = $1 \
        AND project = $2 AND created_at >= $3 \
        ORDER BY created_at DESC, slot DESC, revision DESC LIMIT $4) last \
        ORDER BY created_at, slot, revision",
    activity_kinds: "SELECT kind, count(*) AS n FROM artifacts WHERE tenant_id = $1 \
        AND project = $2 AND created_at >= $3 GROUP BY kind ORDER BY kind",
    // An agent tool (brain_project_list) as well as the console's: every
    // count stops at brain_core::store::COUNTED_UP_TO, idle sessions are
    // counted among the 1,000 oldest open ones (a filter the index does not
    // hold would read them all to find none), and the last activity is read
    // from the newest closed session and the 1,000 newest open ones, by
    // index, not from every session the project had.
    projects: "SELECT p.project, COALESCE(f.revision, 0) AS base_revision, \
          (SELECT count(*) FROM (SELECT 1 FROM focus_bodies fs WHERE fs.tenant_id = p.tenant_id \
             AND fs.project = p.project AND fs.slot <> '' LIMIT 1000) counted) AS slots, \
          (SELECT count(*) FROM (SELECT 1 FROM sessions s WHERE s.tenant_id = p.tenant_id \
             AND s.project = p.project AND s.kind = 'agent' AND s.status = 'open' \
             LIMIT 1000) counted) AS open_sessions, \
          (SELECT count(*) FROM (SELECT s.last_activity_at FROM sessions s \
             WHERE s.tenant_id = p.tenant_id AND s.project = p.project AND s.status = 'open' \
             AND s.kind = 'agent' ORDER BY s.opened_at LIMIT 1000) oldest \
             WHERE oldest.last_activity_at < $3) AS idle_sessions, \
          (SELECT (extract(epoch FROM max(recent.at)) * 1000000)::bigint FROM ( \
             (SELECT s.last_activity_at AS at FROM sessions s WHERE s.tenant_id = p.tenant_id \
                AND s.project = p.project AND s.kind = 'agent' AND s.status <> 'open' \
                ORDER BY s.ended_at DESC NULLS LAST, s.session_id LIMIT 1) \
             UNION ALL \
             (SELECT s.last_activity_at FROM sessions s WHERE s.tenant_id = p.tenant_id \
                AND s.project = p.project AND s.status = 'open' AND s.kind = 'agent' \
                ORDER BY s.opened_at DESC LIMIT 1000)) recent) AS last_active_micros \
        FROM projects p LEFT JOIN focus_bodies f \
          ON f.tenant_id = p.tenant_id AND f.project = p.project AND f.slot = '' \
        WHERE p.tenant_id = $1 AND p.project NOT IN ($5, $6) \
          AND ($2::text IS NULL OR strpos(p.project, $2) > 0) \
          AND ($7::text IS NULL OR starts_with(p.project, $7)) \
          AND ($8::text IS NULL OR p.project > $8) \
        ORDER BY p.project LIMIT $4",
    operator_connections: "SELECT connection_id FROM mcp_connections WHERE tenant_id = $1 \
        AND credential_kind = 'jwt' AND credential_id = $2 AND role = 'operator' \
        AND closed_at IS NULL ORDER BY opened_at DESC LIMIT 50",
    operator_sessions: "SELECT session_id, project FROM sessions WHERE tenant_id = $1 \
        AND kind = 'agent' AND status = 'open' AND opened_by_credential = $2 \
        AND opened_by_role = 'operator' ORDER BY opened_at DESC LIMIT 50",
    mental_model_names: "SELECT name FROM documents WHERE tenant_id = $1 AND project = $2 \
        AND kind = 'mental_model' ORDER BY name LIMIT 200",
    focus_resources: "SELECT project, slot, revision FROM focus_bodies \
        WHERE tenant_id = $1 AND project NOT IN ($2, $3) AND (project, slot) > ($4, $5) \
        ORDER BY project, slot LIMIT $6",
    tenant_ensure: &[
        "WITH t AS (INSERT INTO tenants (tenant_id, created_at) VALUES ($1, $3) \
         ON CONFLICT DO NOTHING) \
         INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING",
    ],
    session_close: "UPDATE sessions SET status = $3, ended_at = $4, last_activity_at = $5, \
        summary = $6, next_focus = $7, nothing_to_capture_reason = $8, focus_outcome = $9, \
        abandon_reason = $10, close_digest = $11, close_result = $12, \
        next_focus_revision = $13 WHERE tenant_id = $1 AND session_id = $2",
    ping: "SELECT 1 AS one",
    gauges: "SELECT (SELECT count(*) FROM sessions WHERE status = 'open' AND kind = 'agent') \
        AS open_sessions, \
        (SELECT count(*) FROM mcp_connections WHERE closed_at IS NULL) AS open_connections, \
        (SELECT count(*) FROM tenant_usage u, brain_limits l WHERE l.name = 'tenant_quota_bytes' \
         AND l.value > 0 AND u.bytes * 5 >= l.value * 4) AS tenants_near_quota, \
        (SELECT coalesce(max(bytes), 0) FROM tenant_usage) AS largest_usage, \
        (SELECT coalesce(max(value), 0) FROM brain_limits WHERE name = 'tenant_quota_bytes') AS quota_bytes",
    tenant_usage: "SELECT coalesce((SELECT bytes FROM tenant_usage WHERE tenant_id = $1), 0) AS bytes, \
        coalesce((SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes'), 0) AS quota_bytes",
    project_delete: &[
        "DELETE FROM focus_history WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM focus_bodies WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM documents WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM daily_briefs WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM artifacts WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM sessions WHERE tenant_id = $1 AND project = $2",
        "DELETE FROM projects WHERE tenant_id = $1 AND project = $2",
    ],
    tenant_delete: &[
        "DELETE FROM elevations WHERE tenant_id = $1",
        "DELETE FROM shared_tokens WHERE tenant_id = $1",
        "DELETE FROM mcp_connections WHERE tenant_id = $1",
        "DELETE FROM focus_history WHERE tenant_id = $1",
        "DELETE FROM focus_bodies WHERE tenant_id = $1",
        "DELETE FROM documents WHERE tenant_id = $1",
        "DELETE FROM daily_briefs WHERE tenant_id = $1",
        "DELETE FROM artifacts WHERE tenant_id = $1",
        "DELETE FROM sessions WHERE tenant_id = $1",
        "DELETE FROM projects WHERE tenant_id = $1",
        "DELETE FROM receipts WHERE tenant_id = $1",
        "DELETE FROM receipt_heads WHERE tenant_id = $1",
        "DELETE FROM tenant_usage WHERE tenant_id = $1",
        "DELETE FROM tenants WHERE tenant_id = $1",
    ],
    placeholder: "$",
    collate_binary: " COLLATE \"C\"",
    date_param: "CAST({} AS date)",
    set_tenant_quota: "INSERT INTO brain_limits (name, value) VALUES ('tenant_quota_bytes', $1) \
        ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    tenant_get: "SELECT 1 AS one FROM tenants WHERE tenant_id = $1",
    import_dangling: "SELECT 'focus ' || f.project || ' ' || f.slot || ' revision ' || f.revision AS what \
        FROM focus_bodies f WHERE f.tenant_id = $1 AND f.revision > 0 AND f.body IS NULL \
          AND NOT EXISTS (SELECT 1 FROM focus_history h WHERE h.tenant_id = f.tenant_id \
            AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision) \
        UNION ALL SELECT 'session ' || s.session_id AS what FROM sessions s \
        WHERE s.tenant_id = $1 AND ((s.next_focus_revision IS NOT NULL AND NOT EXISTS ( \
            SELECT 1 FROM focus_history h WHERE h.tenant_id = s.tenant_id \
              AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '') \
              AND h.revision = s.next_focus_revision)) \
          OR (jsonb_typeof(s.close_result -> 'focus_revision_at_end') = 'number' \
            AND (s.close_result ->> 'focus_revision_at_end') ~ '^[1-9][0-9]{0,17}$' \
            AND CASE WHEN jsonb_typeof(s.close_result -> 'focus_at_end') = 'object' \
                  THEN NOT (s.close_result -> 'focus_at_end') ? 'body' \
                WHEN jsonb_typeof(s.close_result -> 'slot') = 'object' \
                  THEN NOT (s.close_result -> 'slot') ? 'body' ELSE false END \
            AND NOT EXISTS (SELECT 1 FROM focus_history h WHERE h.tenant_id = s.tenant_id \
              AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '') \
              AND h.revision = CASE WHEN (s.close_result ->> 'focus_revision_at_end') \
                ~ '^[0-9]{1,18}$' THEN (s.close_result ->> 'focus_revision_at_end')::bigint END))) \
        LIMIT 1",
    ledger_tip: "SELECT seq, hash FROM receipt_heads WHERE tenant_id = $1",
    // A search ranks the matches within its window (brain_core::store::
    // LISTING_WINDOW artifacts and SEARCH_WINDOW_BYTES of text past its
    // cursor, newest first), read by the project's index: never the word's
    // index, whose entries span every tenant, and never every match of a
    // common word in a large project (320 ms at 130,000). The text's size
    // comes from its TOAST header, not its bytes. The rank is ts_rank's over
    // the query's distinct words, not excluded ones, taken as alternatives:
    // for words that must all match, or a phrase, ts_rank weighs every pair
    // of their positions (186 ms a row for 32 words in a text full of them,
    // 1.2 s a call for a quoted phrase of 8), for alternatives each position
    // once. No word to rank (exclusions only): every rank is 1.
    // Snippets are brain_core::memory::search_snippet's, made in one pass
    // over each hit's text (ts_headline took 79 ms a row on such a text).
    recall_search: concat!(
        planned_per_call!(),
        "SELECT ",
        artifact_columns!(),
        ", r / NULLIF(max(r) OVER (), 0) AS rank \
           FROM (SELECT w.*, ts_rank(w.search, rq) AS r \
             FROM (SELECT * FROM (SELECT a.*, sum(octet_length(a.text)) OVER \
                   (ORDER BY a.created_at DESC, a.artifact_id DESC) AS upto \
                 FROM (SELECT * FROM artifacts WHERE tenant_id = $1 AND project = $2 \
                   AND created_at <= coalesce($10::timestamptz, 'infinity') \
                   AND ($10::timestamptz IS NULL OR (created_at, artifact_id) < ($10, $11::uuid)) \
                   ORDER BY created_at DESC, artifact_id DESC LIMIT 10000) a) sized \
               WHERE upto - octet_length(text) < $12) w, \
             websearch_to_tsquery('simple', $3) AS q, \
             LATERAL (SELECT string_agg(DISTINCT m[1], ' | ')::tsquery AS rq \
               FROM regexp_matches(querytree(q), '''(?:[^'']|'''')*''', 'g') m) alternatives \
             WHERE (cardinality($4::text[]) = 0 OR kind = ANY($4)) AND tags @> $7::text[] \
             AND (NOT $8 OR (kind = 'todo' AND acknowledged_at IS NULL)) \
             AND ($9::uuid IS NULL OR session_id = $9) AND w.search @@ q) matched \
         ORDER BY rank DESC, created_at DESC, artifact_id LIMIT $5 OFFSET $6"
    ),
    // The window a search (with a byte budget, $5) or a listing ($5 NULL)
    // looks through past the cursor: its oldest artifact, when the project
    // goes on past it.
    recall_window_end: concat!(
        planned_per_call!(),
        "WITH listed AS (SELECT created_at, artifact_id, \
           octet_length(text) AS len FROM artifacts WHERE tenant_id = $1 AND project = $2 \
           AND created_at <= coalesce($3::timestamptz, 'infinity') \
           AND ($3::timestamptz IS NULL OR (created_at, artifact_id) < ($3, $4::uuid)) \
           ORDER BY created_at DESC, artifact_id DESC LIMIT 10000), \
         inside AS (SELECT * FROM (SELECT *, sum(len) OVER \
             (ORDER BY created_at DESC, artifact_id DESC) AS upto FROM listed) sized \
           WHERE $5::bigint IS NULL OR upto - len < $5) \
         SELECT created_at, artifact_id FROM inside \
         WHERE (SELECT count(*) FROM listed) = 10000 \
            OR (SELECT count(*) FROM inside) < (SELECT count(*) FROM listed) \
         ORDER BY created_at, artifact_id LIMIT 1"
    ),
    recall_search_ranks: true,
    recall_list: concat!(
        "SELECT ",
        artifact_columns!(),
        " FROM artifacts WHERE tenant_id = $1 AND project = $2 \
         AND (cardinality($4::text[]) = 0 OR kind = ANY($4)) AND tags @> $7::text[] \
         AND (NOT $8 OR (kind = 'todo' AND acknowledged_at IS NULL)) \
         AND ($9::uuid IS NULL OR session_id = $9) AND $3::text = '' \
         AND created_at <= coalesce($10::timestamptz, 'infinity') \
         AND ($10::timestamptz IS NULL OR (created_at, artifact_id) < ($10, $11::uuid)) \
         ORDER BY created_at DESC, artifact_id DESC LIMIT $5 OFFSET $6"
    ),
    // A filtered listing: the filters apply within the window of
    // brain_core::store::LISTING_WINDOW artifacts past the cursor, newest
    // first. (Unfiltered, recall_list: the window would cost SQLite a sort
    // of all 10,000 for a page of ten.)
    recall_list_window: concat!(
        planned_per_call!(),
        "SELECT ",
        artifact_columns!(),
        " FROM (SELECT * FROM artifacts WHERE tenant_id = $1 AND project = $2 \
           AND $3::text = '' \
           AND created_at <= coalesce($10::timestamptz, 'infinity') \
           AND ($10::timestamptz IS NULL OR (created_at, artifact_id) < ($10, $11::uuid)) \
           ORDER BY created_at DESC, artifact_id DESC LIMIT 10000) listed \
         WHERE (cardinality($4::text[]) = 0 OR kind = ANY($4)) AND tags @> $7::text[] \
         AND (NOT $8 OR (kind = 'todo' AND acknowledged_at IS NULL)) \
         AND ($9::uuid IS NULL OR session_id = $9) \
         ORDER BY created_at DESC, artifact_id DESC LIMIT $5 OFFSET $6"
    ),
    focus_with_slots: "SELECT slot, body, revision, updated_at, updated_by_session \
        FROM brain_focus_with_slots($1, $2)",
    focus_watch: Some("SELECT brain_focus_watch($1, $2, $3) AS trusted_ms"),
    focus_exists: "SELECT 1 AS one FROM focus_bodies \
        WHERE tenant_id = $1 AND project = $2 AND slot = $3",
    // Each write the portable forms run has its own form here.
    portable: None,
};

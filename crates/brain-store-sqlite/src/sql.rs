//! The statements `brain_store_sqlx::sql` runs, in SQLite's dialect. Their
//! parameters and columns are documented on `brain_store_sqlx::sql::Sql`.
//!
//! SQLite has no row locks: a write holds the database's one write lock
//! from its first statement, so each `_lock` statement is its plain read.

use brain_store_sqlx::sql::{PortableWrites, Sql};
use brain_store_sqlx::{
    artifact_columns, elevation_columns, focus_body, receipt_columns, session_columns,
    token_columns,
};

/// A project's sessions newest first past the cursor (?4, ?5), of status ?3
/// when given, and `$filter`: one index read per status
/// (sessions_by_project_status, in this order), merged; a status other
/// than ?3 leaves its branch unread.
macro_rules! sqlite_sessions_newest_first {
    ($filter:literal) => {
        concat!(
            sqlite_sessions_newest_first!("open", $filter),
            " UNION ALL ",
            sqlite_sessions_newest_first!("ended", $filter),
            " UNION ALL ",
            sqlite_sessions_newest_first!("conflicted", $filter),
            " UNION ALL ",
            sqlite_sessions_newest_first!("relayed", $filter),
            " UNION ALL ",
            sqlite_sessions_newest_first!("abandoned", $filter),
            " ORDER BY opened_at DESC, session_id DESC"
        )
    };
    ($status:literal, $filter:literal) => {
        concat!(
            "SELECT * FROM sessions WHERE tenant_id = ?1 AND project = ?2 AND status = '",
            $status,
            "' AND (?3 IS NULL OR ?3 = '",
            $status,
            "') AND opened_at <= coalesce(?4, 9223372036854775807) \
             AND (?4 IS NULL OR (opened_at, session_id) < (?4, ?5))",
            $filter
        )
    };
}

/// A session list's columns, over `s`.
macro_rules! sqlite_session_list_columns {
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
    elevation_active: "SELECT EXISTS (SELECT 1 FROM elevations e WHERE tenant_id = ?1 \
        AND credential_id = ?2 AND revoked_at IS NULL AND expires_at > ?3 \
        AND (e.connection_id IS NULL OR NOT EXISTS (SELECT 1 FROM mcp_connections c \
             WHERE c.tenant_id = e.tenant_id AND c.connection_id = e.connection_id \
             AND c.closed_at IS NOT NULL)) \
        AND ((connection_id IS NOT NULL AND connection_id = ?4) \
             OR (?4 IS NULL AND session_id = ?5))) AS found",
    connection_owner: "SELECT credential_id, role, closed_at IS NOT NULL AS closed \
        FROM mcp_connections WHERE tenant_id = ?1 AND connection_id = ?2",
    elevation_insert: "INSERT INTO elevations (tenant_id, elevation_id, credential_id, subject, \
        connection_id, session_id, reason, granted_at, expires_at) \
        VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
    elevation_revoke: concat!(
        "UPDATE elevations SET revoked_at = COALESCE(revoked_at, ?4) \
         WHERE tenant_id = ?1 AND elevation_id = ?2 AND credential_id = ?3 RETURNING ",
        elevation_columns!()
    ),
    elevation_list: concat!(
        "SELECT ",
        elevation_columns!(),
        " FROM elevations e WHERE tenant_id = ?1 AND credential_id = ?2 \
         AND revoked_at IS NULL AND expires_at > ?3 \
         AND (e.connection_id IS NULL OR NOT EXISTS (SELECT 1 FROM mcp_connections c \
             WHERE c.tenant_id = e.tenant_id AND c.connection_id = e.connection_id \
             AND c.closed_at IS NOT NULL)) ORDER BY granted_at"
    ),
    token_insert: "INSERT INTO shared_tokens (tenant_id, token_id, name, token_hash, created_at) \
        VALUES (?1,?2,?3,?4,?5) ON CONFLICT DO NOTHING",
    token_revoke: concat!(
        "UPDATE shared_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND name = ?2 \
         AND revoked_at IS NULL RETURNING ",
        token_columns!()
    ),
    token_list: concat!(
        "SELECT ",
        token_columns!(),
        " FROM shared_tokens WHERE tenant_id = ?1 ORDER BY created_at"
    ),
    token_find: concat!(
        "SELECT tenant_id, ",
        token_columns!(),
        " FROM shared_tokens WHERE token_hash = ?1 AND revoked_at IS NULL"
    ),
    token_exists: "SELECT EXISTS (SELECT 1 FROM shared_tokens WHERE revoked_at IS NULL) AS found",
    connection_insert: "INSERT INTO mcp_connections (tenant_id, connection_id, credential_kind, \
        credential_id, opened_at, last_seen_at, init_params, tracer_session_id, role) \
        VALUES (?1,?2,?3,?4,?5,?5,?6,?7,?8)",
    connection_get: "SELECT credential_kind, credential_id, role, closed_at, last_seen_at, \
        init_params, tracer_session_id FROM mcp_connections \
        WHERE tenant_id = ?1 AND connection_id = ?2",
    connection_touch: "UPDATE mcp_connections SET last_seen_at = ?3 \
        WHERE tenant_id = ?1 AND connection_id = ?2 AND closed_at IS NULL",
    connection_close: "UPDATE mcp_connections SET closed_at = COALESCE(closed_at, ?3) \
        WHERE tenant_id = ?1 AND connection_id = ?2 RETURNING tracer_session_id",
    connection_elevations_end: "UPDATE elevations SET revoked_at = ?3 \
        WHERE tenant_id = ?1 AND connection_id = ?2 AND revoked_at IS NULL",
    tracer_close: "UPDATE sessions SET status = 'ended', ended_at = ?3, last_activity_at = ?3 \
        WHERE tenant_id = ?1 AND session_id = ?2 AND kind = 'tracer' AND status = 'open'",
    // The write transaction holds the database's write lock already.
    tenant_claim: "SELECT 1 FROM tenants WHERE tenant_id = ?1",
    connection_open_count: "SELECT count(*) FILTER (WHERE credential_kind = ?2 \
        AND credential_id = ?3 AND role = ?5) AS mine, count(*) AS total \
        FROM mcp_connections WHERE tenant_id = ?1 AND closed_at IS NULL AND last_seen_at > ?4",
    connection_expire: "UPDATE mcp_connections SET closed_at = ?1 \
        WHERE closed_at IS NULL AND last_seen_at <= ?2 \
        RETURNING tenant_id, connection_id, tracer_session_id",
    session_started_on: "SELECT session_id FROM ( \
        SELECT * FROM (SELECT session_id, at FROM (SELECT seq, at, session_id, connection_id, \
            tool, outcome FROM receipts WHERE tenant_id = ?1 ORDER BY seq DESC LIMIT 10000) newest \
          WHERE connection_id = ?2 AND tool = 'brain_session_start' AND outcome = 'ok' \
          ORDER BY seq DESC LIMIT 1) found \
        UNION ALL SELECT started_session_id, started_at FROM mcp_connections \
          WHERE tenant_id = ?1 AND connection_id = ?2 AND started_session_id IS NOT NULL) \
        started ORDER BY at DESC LIMIT 1",
    connection_started: "UPDATE mcp_connections SET started_session_id = ?3, started_at = ?4 \
        WHERE tenant_id = ?1 AND connection_id = ?2 AND closed_at IS NULL",
    runtime_expire: "UPDATE sessions SET status = 'abandoned', ended_at = ?1, \
        last_activity_at = ?1, \
        abandon_reason = 'expired: no close within the runtime session lifetime' \
        WHERE project = ?2 AND kind = 'agent' AND status = 'open' AND last_activity_at <= ?3",
    session_get: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions s WHERE tenant_id = ?1 AND session_id = ?2"
    ),
    session_lock: concat!(
        "SELECT ",
        session_columns!(),
        " FROM sessions s WHERE tenant_id = ?1 AND session_id = ?2"
    ),
    focus_get: concat!(
        "SELECT ",
        focus_body!("f"),
        " AS body, revision, updated_at, updated_by_session FROM focus_bodies f \
         WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3"
    ),
    focus_lock: concat!(
        "SELECT ",
        focus_body!("f"),
        " AS body, revision, updated_at, updated_by_session FROM focus_bodies f \
         WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3"
    ),
    session_insert: "INSERT INTO sessions (tenant_id, session_id, project, client_key, kind, \
        bound_slot, started_focus_revision, status, opened_at, last_activity_at, opened_by_kind, \
        opened_by_subject, opened_by_role, opened_by_credential, read_revision, relayed_from) \
        VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
    // Counts a client can grow stop at brain_core::store::COUNTED_UP_TO.
    ledger_size: "SELECT count(*) AS n FROM (SELECT 1 FROM artifacts WHERE tenant_id = ?1 \
        AND session_id = ?2 LIMIT 1000) counted",
    open_agent_sessions: "SELECT count(*) AS n FROM (SELECT 1 FROM sessions \
        WHERE tenant_id = ?1 AND project = ?2 AND status = 'open' AND kind = 'agent' \
        LIMIT ?3) counted",
    inbox_count: "SELECT count(*) AS n FROM (SELECT 1 FROM artifacts WHERE tenant_id = ?1 \
        AND project = ?2 AND kind = 'todo' AND acknowledged_at IS NULL LIMIT 1000) counted",
    session_bind: "UPDATE sessions SET bound_slot = ?3, last_activity_at = ?4, read_revision = ?5 \
        WHERE tenant_id = ?1 AND session_id = ?2",
    session_touch: "UPDATE sessions SET last_activity_at = ?3 \
        WHERE tenant_id = ?1 AND session_id = ?2",
    slot_ensure: "INSERT INTO focus_bodies (tenant_id, project, slot) VALUES (?1, ?2, ?3) \
        ON CONFLICT DO NOTHING",
    document_get: "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
        WHERE tenant_id = ?1 AND project = ?2 AND kind = ?3 AND name = ?4",
    document_lock: "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
        WHERE tenant_id = ?1 AND project = ?2 AND kind = ?3 AND name = ?4",
    // A write transaction holds the database's write lock (BEGIN IMMEDIATE)
    // already: reading the row is claim enough.
    project_claim: "SELECT 1 FROM projects WHERE tenant_id = ?1 AND project = ?2",
    mental_model_count: "SELECT count(*) AS n FROM documents WHERE tenant_id = ?1 \
        AND project = ?2 AND kind = 'mental_model' AND revision > 0",
    document_write: "INSERT INTO documents (tenant_id, project, kind, name, body, revision, \
        updated_at, updated_by) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) \
        ON CONFLICT (tenant_id, project, kind, name) DO UPDATE SET body = EXCLUDED.body, \
        revision = EXCLUDED.revision, updated_at = EXCLUDED.updated_at, \
        updated_by = EXCLUDED.updated_by WHERE documents.revision = EXCLUDED.revision - 1",
    focus_history: "SELECT revision, body, session_id, receipt_seq, created_at FROM focus_history \
        WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3 AND revision < ?4 \
        ORDER BY revision DESC LIMIT ?5",
    // Read status by status and merged (SQLite merges a compound ORDER BY
    // as far as the reader reads), so a list without a status reads its
    // page, not every session of the project (110 ms at 220,000); the outer
    // ORDER BY sorts the page alone.
    session_list: concat!(
        sqlite_session_list_columns!(),
        sqlite_sessions_newest_first!(
            " AND kind = 'agent' \
            AND (?7 IS NULL OR bound_slot = ?7) AND (?8 IS NULL OR client_key = ?8) \
            AND (?9 IS NULL OR (opened_at, session_id) >= (?9, ?10))"
        ),
        " LIMIT ?6) s ORDER BY opened_at DESC, session_id DESC"
    ),
    // Slot and client_key filter within the window down to its oldest (?9,
    // ?10, read first by session_list_window_end) or of the 10,000
    // (LISTING_WINDOW) newest past the cursor: a filter that matches little
    // read on through the project. 20,000 bounds the read only (as
    // PostgreSQL's).
    session_list_window: concat!(
        sqlite_session_list_columns!(),
        sqlite_sessions_newest_first!(
            " AND kind = 'agent' \
            AND (?9 IS NULL OR (opened_at, session_id) >= (?9, ?10))"
        ),
        " LIMIT 20000) s \
         WHERE (?7 IS NULL OR bound_slot = ?7) AND (?8 IS NULL OR client_key = ?8) \
         ORDER BY opened_at DESC, session_id DESC LIMIT ?6"
    ),
    session_list_window_end: concat!(
        "SELECT opened_at, session_id FROM (",
        sqlite_sessions_newest_first!(" AND kind = 'agent'"),
        " LIMIT 1 OFFSET 9999) s"
    ),
    receipts_page: concat!(
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = ?1 AND seq > ?2 \
         AND (?3 IS NULL OR project = ?3) AND (?4 IS NULL OR session_id = ?4) \
         AND seq < coalesce(?6, 9223372036854775807) ORDER BY seq ASC LIMIT ?5"
    ),
    receipts_page_newest_first: concat!(
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = ?1 AND seq > ?2 \
         AND (?3 IS NULL OR project = ?3) AND (?4 IS NULL OR session_id = ?4) \
         AND seq < coalesce(?6, 9223372036854775807) ORDER BY seq DESC LIMIT ?5"
    ),
    receipts_all: concat!(
        "SELECT ",
        receipt_columns!(),
        " FROM receipts WHERE tenant_id = ?1 ORDER BY seq"
    ),
    session_ledger: concat!(
        "SELECT ",
        artifact_columns!(),
        " FROM artifacts WHERE tenant_id = ?1 AND session_id = ?2 \
         ORDER BY created_at, artifact_id LIMIT ?3"
    ),
    briefs_due: "SELECT p.tenant_id, p.project FROM projects p \
        WHERE NOT EXISTS (SELECT 1 FROM daily_briefs b WHERE b.tenant_id = p.tenant_id \
                            AND b.project = p.project AND b.day = ?2) \
          AND (EXISTS (SELECT 1 FROM sessions s WHERE s.tenant_id = p.tenant_id \
                         AND s.project = p.project AND s.kind = 'agent' \
                         AND s.last_activity_at >= ?1) \
            OR EXISTS (SELECT 1 FROM artifacts a WHERE a.tenant_id = p.tenant_id \
                         AND a.project = p.project AND a.created_at >= ?1))",
    brief_insert: "INSERT INTO daily_briefs (tenant_id, project, day, body, generated_at) \
        VALUES (?1,?2,?3,?4,?5) ON CONFLICT DO NOTHING",
    activity_closed: "SELECT status, substr(summary, 1, 200) AS summary, \
        (SELECT count(*) FROM sessions WHERE tenant_id = ?1 AND project = ?2 \
         AND kind = 'agent' AND ended_at >= ?3) AS n \
        FROM (SELECT status, summary, ended_at, session_id FROM sessions WHERE tenant_id = ?1 \
        AND project = ?2 AND kind = 'agent' AND ended_at >= ?3 \
        ORDER BY ended_at DESC, session_id DESC LIMIT ?4) AS last ORDER BY ended_at, session_id",
    activity_focus: "SELECT slot, revision, \
        (SELECT count(*) FROM focus_history WHERE tenant_id = ?1 AND project = ?2 \
         AND created_at >= ?3) AS n \
        FROM (SELECT slot, revision, created_at FROM focus_history WHERE tenant_id = ?1 \
        AND project = ?2 AND created_at >= ?3 \
        ORDER BY created_at DESC, slot DESC, revision DESC LIMIT ?4) AS last \
        ORDER BY created_at, slot, revision",
    activity_kinds: "SELECT kind, count(*) AS n FROM artifacts WHERE tenant_id = ?1 \
        AND project = ?2 AND created_at >= ?3 GROUP BY kind ORDER BY kind",
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
             WHERE oldest.last_activity_at < ?3) AS idle_sessions, \
          (SELECT max(at) FROM ( \
             SELECT * FROM (SELECT s.last_activity_at AS at FROM sessions s \
                WHERE s.tenant_id = p.tenant_id AND s.project = p.project AND s.kind = 'agent' \
                AND s.status <> 'open' ORDER BY s.ended_at DESC, s.session_id LIMIT 1) \
             UNION ALL \
             SELECT * FROM (SELECT s.last_activity_at FROM sessions s \
                WHERE s.tenant_id = p.tenant_id AND s.project = p.project AND s.status = 'open' \
                AND s.kind = 'agent' ORDER BY s.opened_at DESC LIMIT 1000))) \
             AS last_active_micros \
        FROM projects p LEFT JOIN focus_bodies f \
          ON f.tenant_id = p.tenant_id AND f.project = p.project AND f.slot = '' \
        WHERE p.tenant_id = ?1 AND p.project NOT IN (?5, ?6) \
          AND (?2 IS NULL OR instr(p.project, ?2) > 0) \
          AND (?7 IS NULL OR substr(p.project, 1, length(?7)) = ?7) \
          AND (?8 IS NULL OR p.project > ?8) \
        ORDER BY p.project LIMIT ?4",
    operator_connections: "SELECT connection_id FROM mcp_connections WHERE tenant_id = ?1 \
        AND credential_kind = 'jwt' AND credential_id = ?2 AND role = 'operator' \
        AND closed_at IS NULL ORDER BY opened_at DESC LIMIT 50",
    operator_sessions: "SELECT session_id, project FROM sessions WHERE tenant_id = ?1 \
        AND kind = 'agent' AND status = 'open' AND opened_by_credential = ?2 \
        AND opened_by_role = 'operator' ORDER BY opened_at DESC LIMIT 50",
    mental_model_names: "SELECT name FROM documents WHERE tenant_id = ?1 AND project = ?2 \
        AND kind = 'mental_model' ORDER BY name LIMIT 200",
    focus_resources: "SELECT project, slot, revision FROM focus_bodies \
        WHERE tenant_id = ?1 AND project NOT IN (?2, ?3) AND (project, slot) > (?4, ?5) \
        ORDER BY project, slot LIMIT ?6",
    tenant_ensure: &[
        "INSERT INTO tenants (tenant_id, created_at) VALUES (?1, ?3) ON CONFLICT DO NOTHING",
        "INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES (?1, 0, ?2) ON CONFLICT DO NOTHING",
    ],
    session_close: "UPDATE sessions SET status = ?3, ended_at = ?4, last_activity_at = ?5, \
        summary = ?6, next_focus = ?7, nothing_to_capture_reason = ?8, focus_outcome = ?9, \
        abandon_reason = ?10, close_digest = ?11, close_result = ?12, \
        next_focus_revision = ?13 WHERE tenant_id = ?1 AND session_id = ?2",
    ping: "SELECT 1 AS one",
    gauges: "SELECT (SELECT count(*) FROM sessions WHERE status = 'open' AND kind = 'agent') \
        AS open_sessions, \
        (SELECT count(*) FROM mcp_connections WHERE closed_at IS NULL) AS open_connections, \
        (SELECT count(*) FROM tenant_usage u, brain_limits l WHERE l.name = 'tenant_quota_bytes' \
         AND l.value > 0 AND u.bytes * 5 >= l.value * 4) AS tenants_near_quota, \
        (SELECT coalesce(max(bytes), 0) FROM tenant_usage) AS largest_usage, \
        (SELECT coalesce(max(value), 0) FROM brain_limits WHERE name = 'tenant_quota_bytes') AS quota_bytes",
    tenant_usage: "SELECT coalesce((SELECT bytes FROM tenant_usage WHERE tenant_id = ?1), 0) AS bytes, \
        coalesce((SELECT value FROM brain_limits WHERE name = 'tenant_quota_bytes'), 0) AS quota_bytes",
    project_delete: &[
        "DELETE FROM focus_history WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM focus_bodies WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM documents WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM daily_briefs WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM artifacts WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM sessions WHERE tenant_id = ?1 AND project = ?2",
        "DELETE FROM projects WHERE tenant_id = ?1 AND project = ?2",
    ],
    tenant_delete: &[
        "DELETE FROM elevations WHERE tenant_id = ?1",
        "DELETE FROM shared_tokens WHERE tenant_id = ?1",
        "DELETE FROM mcp_connections WHERE tenant_id = ?1",
        "DELETE FROM focus_history WHERE tenant_id = ?1",
        "DELETE FROM focus_bodies WHERE tenant_id = ?1",
        "DELETE FROM documents WHERE tenant_id = ?1",
        "DELETE FROM daily_briefs WHERE tenant_id = ?1",
        "DELETE FROM artifacts WHERE tenant_id = ?1",
        "DELETE FROM sessions WHERE tenant_id = ?1",
        "DELETE FROM projects WHERE tenant_id = ?1",
        "DELETE FROM receipts WHERE tenant_id = ?1",
        "DELETE FROM receipt_heads WHERE tenant_id = ?1",
        "DELETE FROM tenant_usage WHERE tenant_id = ?1",
        "DELETE FROM tenants WHERE tenant_id = ?1",
    ],
    placeholder: "?",
    collate_binary: "",
    date_param: "{}",
    set_tenant_quota: "INSERT INTO brain_limits (name, value) VALUES ('tenant_quota_bytes', ?1) \
        ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    tenant_get: "SELECT 1 AS one FROM tenants WHERE tenant_id = ?1",
    import_dangling: "SELECT 'focus ' || f.project || ' ' || f.slot || ' revision ' || f.revision AS what \
        FROM focus_bodies f WHERE f.tenant_id = ?1 AND f.revision > 0 AND f.body IS NULL \
          AND NOT EXISTS (SELECT 1 FROM focus_history h WHERE h.tenant_id = f.tenant_id \
            AND h.project = f.project AND h.slot = f.slot AND h.revision = f.revision) \
        UNION ALL SELECT 'session ' || lower(substr(hex(s.session_id), 1, 8) || '-' \
          || substr(hex(s.session_id), 9, 4) || '-' || substr(hex(s.session_id), 13, 4) || '-' \
          || substr(hex(s.session_id), 17, 4) || '-' || substr(hex(s.session_id), 21)) AS what \
        FROM sessions s WHERE s.tenant_id = ?1 AND ((s.next_focus_revision IS NOT NULL AND NOT EXISTS ( \
            SELECT 1 FROM focus_history h WHERE h.tenant_id = s.tenant_id \
              AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '') \
              AND h.revision = s.next_focus_revision)) \
          OR (json_type(s.close_result, '$.focus_revision_at_end') = 'integer' \
            AND json_extract(s.close_result, '$.focus_revision_at_end') > 0 \
            AND CASE WHEN json_type(s.close_result, '$.focus_at_end') = 'object' \
                  THEN json_type(s.close_result, '$.focus_at_end.body') IS NULL \
                WHEN json_type(s.close_result, '$.slot') = 'object' \
                  THEN json_type(s.close_result, '$.slot.body') IS NULL ELSE 0 END \
            AND NOT EXISTS (SELECT 1 FROM focus_history h WHERE h.tenant_id = s.tenant_id \
              AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '') \
              AND h.revision = json_extract(s.close_result, '$.focus_revision_at_end')))) \
        LIMIT 1",
    ledger_tip: "SELECT seq, hash FROM receipt_heads WHERE tenant_id = ?1",
    // The window's artifacts the filters keep (brain_core::store::
    // LISTING_WINDOW artifacts and SEARCH_WINDOW_BYTES of text past the
    // cursor; octet_length reads a text's size, not its bytes), for brain
    // to match, rank and page (recall_search_ranks). SQLite's full-text
    // index read every match in the project before the window applied (1.6
    // s at 130,000 matches), and bounded to the window's rowids it still
    // checked phrases on the rows of other projects and tenants between
    // them (3 s a search); its highlight() and snippet() cost in proportion
    // to a text's hits times the query's phrases, or to pairs of hits.
    // Migration 0028 drops it. ?3, the query, is brain's to read: it is
    // bound only because both stores take the same parameters.
    recall_search: concat!(
        "WITH listed AS MATERIALIZED (SELECT rowid AS rid, octet_length(text) AS len, \
           created_at, artifact_id FROM artifacts WHERE tenant_id = ?1 AND project = ?2 \
           AND created_at <= coalesce(?10, 9223372036854775807) \
           AND (?10 IS NULL OR (created_at, artifact_id) < (?10, ?11)) \
           AND ?3 IS NOT NULL \
           ORDER BY created_at DESC, artifact_id DESC LIMIT 10000), \
         windowed(rid) AS MATERIALIZED (SELECT rid FROM (SELECT rid, len, sum(len) OVER \
             (ORDER BY created_at DESC, artifact_id DESC) AS upto FROM listed) \
           WHERE upto - len < ?12) \
         SELECT ",
        artifact_columns!(a),
        " FROM artifacts a WHERE a.rowid IN windowed \
         AND a.tenant_id = ?1 AND a.project = ?2 \
         AND (json_array_length(?4) = 0 OR a.kind IN (SELECT value FROM json_each(?4))) \
         AND NOT EXISTS (SELECT 1 FROM json_each(?7) w \
                         WHERE w.value NOT IN (SELECT t.value FROM json_each(a.tags) t)) \
         AND (NOT ?8 OR (a.kind = 'todo' AND a.acknowledged_at IS NULL)) \
         AND (?9 IS NULL OR a.session_id = ?9)"
    ),
    recall_search_ranks: false,
    // As PostgreSQL's: the window's oldest artifact, when the project goes on
    // past it ($5 the byte budget of a search, NULL for a listing).
    recall_window_end: "WITH listed AS MATERIALIZED (SELECT created_at, artifact_id, \
           octet_length(text) AS len FROM artifacts WHERE tenant_id = ?1 AND project = ?2 \
           AND created_at <= coalesce(?3, 9223372036854775807) \
           AND (?3 IS NULL OR (created_at, artifact_id) < (?3, ?4)) \
           ORDER BY created_at DESC, artifact_id DESC LIMIT 10000), \
         inside AS MATERIALIZED (SELECT * FROM (SELECT *, sum(len) OVER \
             (ORDER BY created_at DESC, artifact_id DESC) AS upto FROM listed) \
           WHERE ?5 IS NULL OR upto - len < ?5) \
         SELECT created_at, artifact_id FROM inside \
         WHERE (SELECT count(*) FROM listed) = 10000 \
            OR (SELECT count(*) FROM inside) < (SELECT count(*) FROM listed) \
         ORDER BY created_at, artifact_id LIMIT 1",
    recall_list: concat!(
        "SELECT ",
        artifact_columns!(a),
        " FROM artifacts a WHERE a.tenant_id = ?1 AND a.project = ?2 \
         AND (json_array_length(?4) = 0 OR a.kind IN (SELECT value FROM json_each(?4))) \
         AND NOT EXISTS (SELECT 1 FROM json_each(?7) w \
                         WHERE w.value NOT IN (SELECT t.value FROM json_each(a.tags) t)) \
         AND (NOT ?8 OR (a.kind = 'todo' AND a.acknowledged_at IS NULL)) \
         AND (?9 IS NULL OR a.session_id = ?9) \
         AND a.created_at <= coalesce(?10, 9223372036854775807) \
         AND (?10 IS NULL OR (a.created_at, a.artifact_id) < (?10, ?11)) \
         ORDER BY a.created_at DESC, a.artifact_id DESC LIMIT ?5 OFFSET ?6"
    ),
    // A filtered listing: the filters apply within the window of
    // brain_core::store::LISTING_WINDOW artifacts past the cursor, newest
    // first. (Unfiltered, recall_list: the window would cost SQLite a sort
    // of all 10,000 for a page of ten.)
    recall_list_window: concat!(
        "SELECT ",
        artifact_columns!(a),
        " FROM (SELECT * FROM artifacts WHERE tenant_id = ?1 AND project = ?2 \
           AND created_at <= coalesce(?10, 9223372036854775807) \
           AND (?10 IS NULL OR (created_at, artifact_id) < (?10, ?11)) \
           ORDER BY created_at DESC, artifact_id DESC LIMIT 10000) a \
         WHERE (json_array_length(?4) = 0 OR a.kind IN (SELECT value FROM json_each(?4))) \
         AND NOT EXISTS (SELECT 1 FROM json_each(?7) w \
                         WHERE w.value NOT IN (SELECT t.value FROM json_each(a.tags) t)) \
         AND (NOT ?8 OR (a.kind = 'todo' AND a.acknowledged_at IS NULL)) \
         AND (?9 IS NULL OR a.session_id = ?9) \
         ORDER BY a.created_at DESC, a.artifact_id DESC LIMIT ?5 OFFSET ?6"
    ),
    focus_with_slots: concat!(
        "SELECT slot, CASE WHEN slot = '' THEN ",
        focus_body!("f"),
        " ELSE '' END AS body, revision, updated_at, updated_by_session FROM focus_bodies f \
         WHERE tenant_id = ?1 AND project = ?2 ORDER BY slot LIMIT 201"
    ),
    // SQLite reads in process: no replica remembers its focus reads.
    focus_watch: None,
    focus_exists: "SELECT 1 AS one FROM focus_bodies \
        WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3",
    portable: Some(&PORTABLE),
};

/// The portable writes' statements: SQLite runs every write in its
/// portable form.
static PORTABLE: PortableWrites = PortableWrites {
    project_insert: "INSERT INTO projects (tenant_id, project, created_at) VALUES (?1, ?2, ?3) \
        ON CONFLICT DO NOTHING",
    ledger_tip_lock: "SELECT seq, hash FROM receipt_heads WHERE tenant_id = ?1",
    receipt_insert: "INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, \
        session_id, credential_kind, subject, token_id, connection_id, elevated, outcome, \
        request_digest, prev_hash, hash) \
        VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
    ledger_tip_set: "UPDATE receipt_heads SET seq = ?2, hash = ?3 WHERE tenant_id = ?1",
    history_insert: "INSERT INTO focus_history (tenant_id, project, slot, revision, body, \
        session_id, receipt_seq, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    // The body is the history row of this revision (history_insert): the
    // focus row only names it (focus_body!).
    focus_write: "UPDATE focus_bodies SET body = '', revision = ?4, updated_at = ?5, \
        updated_by_session = ?6 WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3",
    artifact_insert: "INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, \
        text, tags, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    // The count apart from the ids: a window count read every row of the
    // window before the LIMIT.
    unattributed: "SELECT artifact_id, (SELECT count(*) FROM (SELECT 1 FROM artifacts \
        WHERE tenant_id = ?1 AND project = ?2 AND session_id IS NULL \
        AND created_at >= ?3 AND created_at <= ?4 LIMIT 1000)) AS n FROM artifacts \
        WHERE tenant_id = ?1 AND project = ?2 AND session_id IS NULL \
        AND created_at >= ?3 AND created_at <= ?4 ORDER BY created_at, artifact_id LIMIT 20",
    artifact_state: "SELECT kind, acknowledged_at IS NOT NULL AS acknowledged FROM artifacts \
        WHERE tenant_id = ?1 AND project = ?2 AND artifact_id = ?3",
    acknowledge: "UPDATE artifacts SET acknowledged_at = ?4, ack_note = ?5 \
        WHERE tenant_id = ?1 AND project = ?2 AND artifact_id = ?3 \
        AND kind = 'todo' AND acknowledged_at IS NULL",
    previous_open: "SELECT session_id, opened_at, last_activity_at FROM sessions \
        WHERE tenant_id = ?1 AND project = ?2 AND client_key = ?3 AND kind = 'agent' \
        AND status = 'open' AND session_id <> ?4 ORDER BY opened_at DESC LIMIT 1",
    mental_models: "SELECT kind, name, body, revision, updated_at, updated_by FROM documents \
        WHERE tenant_id = ?1 AND project = ?2 AND kind = 'mental_model' ORDER BY name",
    latest_brief: "SELECT body, generated_at FROM daily_briefs WHERE tenant_id = ?1 \
        AND project = ?2 ORDER BY day DESC LIMIT 1",
    recent_closed: "SELECT session_id, status, summary, ended_at FROM sessions \
        WHERE tenant_id = ?1 AND project = ?2 AND kind = 'agent' AND status <> 'open' \
        ORDER BY ended_at DESC, session_id LIMIT 5",
};

//! The statements `brain_core::sql` runs, in PostgreSQL's dialect. Their
//! parameters and columns are documented on `brain_core::sql::Sql`.

use brain_core::sql::Sql;
use brain_core::{elevation_columns, token_columns};

pub(crate) static SQL: Sql = Sql {
    elevation_active: "SELECT EXISTS (SELECT 1 FROM elevations WHERE tenant_id = $1 \
        AND credential_id = $2 AND revoked_at IS NULL AND expires_at > $3 \
        AND ((connection_id IS NOT NULL AND connection_id = $4) \
             OR ($4::text IS NULL AND session_id = $5))) AS found",
    connection_owner: "SELECT credential_id, role, closed_at IS NOT NULL AS closed \
        FROM mcp_connections WHERE tenant_id = $1 AND connection_id = $2",
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
        " FROM elevations WHERE tenant_id = $1 AND credential_id = $2 \
         AND revoked_at IS NULL AND expires_at > $3 ORDER BY granted_at"
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
    tracer_close: "UPDATE sessions SET status = 'ended', ended_at = $3, last_activity_at = $3 \
        WHERE tenant_id = $1 AND session_id = $2 AND kind = 'tracer' AND status = 'open'",
    connection_open_count: "SELECT count(*) FILTER (WHERE credential_kind = $2 \
        AND credential_id = $3 AND role = $5) AS mine, count(*) AS total \
        FROM mcp_connections WHERE tenant_id = $1 AND closed_at IS NULL AND last_seen_at > $4",
    connection_expire: "UPDATE mcp_connections SET closed_at = $1 \
        WHERE closed_at IS NULL AND last_seen_at <= $2 \
        RETURNING tenant_id, connection_id, tracer_session_id",
    session_started_on: "SELECT session_id FROM receipts WHERE tenant_id = $1 \
        AND connection_id = $2 AND tool = 'brain_session_start' AND outcome = 'ok' \
        ORDER BY seq DESC LIMIT 1",
    runtime_expire: "UPDATE sessions SET status = 'abandoned', ended_at = $1, \
        last_activity_at = $1, \
        abandon_reason = 'expired: no close within the runtime session lifetime' \
        WHERE project = $2 AND kind = 'agent' AND status = 'open' AND last_activity_at <= $3",
};

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
};

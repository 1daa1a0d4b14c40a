//! Reads (focus, session, receipts) and the MCP connection registry.

use brain_core::error::{DomainError, StoreError};
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{Caller, CredentialKind, Focus, now_micros};
use brain_core::receipt::Receipt;
use brain_core::store::{ConnectionRecord, SessionDetail};
use sqlx::{PgPool, Row};

use crate::lifecycle::{ledger_size, load_focus, load_session};
use crate::{PgStore, db, rows};

pub(crate) async fn focus(
    pool: &PgPool,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<Focus, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    load_focus(&mut conn, tenant, project, slot, false).await
}

pub(crate) async fn session_detail(
    store: &PgStore,
    tenant: &TenantId,
    id: SessionId,
) -> Result<SessionDetail, StoreError> {
    let mut conn = store.pool.acquire().await.map_err(db)?;
    let (session, _) = load_session(&mut conn, tenant, id, false)
        .await?
        .ok_or_else(DomainError::session_not_found)?;
    let ledger_size = ledger_size(&mut conn, tenant, id).await?;
    Ok(SessionDetail {
        idle: session.is_idle(now_micros(), store.settings.idle_secs),
        session,
        ledger_size,
    })
}

pub(crate) async fn receipts(pool: &PgPool, tenant: &TenantId) -> Result<Vec<Receipt>, StoreError> {
    let sql = format!(
        "SELECT {} FROM receipts WHERE tenant_id = $1 ORDER BY seq",
        rows::RECEIPT_COLUMNS
    );
    let rows = sqlx::query(&sql)
        .bind(tenant.as_str())
        .fetch_all(pool)
        .await
        .map_err(db)?;
    rows.iter().map(rows::receipt).collect()
}

pub(crate) async fn connection_open(
    pool: &PgPool,
    caller: &Caller,
    connection_id: &str,
    init_params: Option<serde_json::Value>,
) -> Result<(), StoreError> {
    let now = now_micros();
    sqlx::query(
        "INSERT INTO mcp_connections (tenant_id, connection_id, credential_kind, credential_id, opened_at, last_seen_at, init_params) \
         VALUES ($1,$2,$3,$4,$5,$5,$6) ON CONFLICT DO NOTHING",
    )
    .bind(caller.tenant.as_str())
    .bind(connection_id)
    .bind(caller.kind.as_str())
    .bind(&caller.credential_id)
    .bind(now)
    .bind(init_params)
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}

/// Look up a connection and mark it seen, in one round trip. A connection
/// unused for longer than `idle_secs` is closed here, on whichever replica sees it.
pub(crate) async fn connection_get(
    pool: &PgPool,
    tenant: &TenantId,
    connection_id: &str,
    idle_secs: i64,
) -> Result<Option<ConnectionRecord>, StoreError> {
    let row = sqlx::query(
        "UPDATE mcp_connections SET \
           closed_at = CASE WHEN closed_at IS NULL AND last_seen_at < $4 THEN $3 ELSE closed_at END, \
           last_seen_at = CASE WHEN closed_at IS NULL AND last_seen_at >= $4 THEN $3 ELSE last_seen_at END \
         WHERE tenant_id = $1 AND connection_id = $2 \
         RETURNING credential_kind, credential_id, closed_at IS NOT NULL AS closed, init_params",
    )
    .bind(tenant.as_str())
    .bind(connection_id)
    .bind(now_micros())
    .bind(now_micros() - chrono::Duration::seconds(idle_secs))
    .fetch_optional(pool)
    .await
    .map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let kind: String = row.try_get("credential_kind").map_err(db)?;
    Ok(Some(ConnectionRecord {
        tenant: tenant.clone(),
        credential_kind: CredentialKind::parse(&kind)
            .ok_or_else(|| StoreError::Backend("stored credential kind does not parse".into()))?,
        credential_id: row.try_get("credential_id").map_err(db)?,
        closed: row.try_get("closed").map_err(db)?,
        init_params: row.try_get("init_params").map_err(db)?,
    }))
}

pub(crate) async fn connection_close(
    pool: &PgPool,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE mcp_connections SET closed_at = $3 WHERE tenant_id = $1 AND connection_id = $2 AND closed_at IS NULL",
    )
    .bind(tenant.as_str())
    .bind(connection_id)
    .bind(now_micros())
    .execute(pool)
    .await
    .map_err(db)?;
    Ok(())
}

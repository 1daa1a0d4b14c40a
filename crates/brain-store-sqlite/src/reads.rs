//! Reads (focus, session, receipts) and the MCP connection registry.

use crate::dialect::Cols;
use brain_core::error::{DomainError, StoreError};
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{Focus, now_micros};
use brain_core::receipt::Receipt;
use brain_core::sql::rows;
use brain_core::store::SessionDetail;
use sqlx::SqlitePool;

use crate::lifecycle::{ledger_size, load_focus, load_session};
use crate::{SqliteStore, db};

pub(crate) async fn focus(
    pool: &SqlitePool,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<Focus, StoreError> {
    let mut conn = pool.acquire().await.map_err(db)?;
    load_focus(&mut conn, tenant, project, slot).await
}

pub(crate) async fn session_detail(
    store: &SqliteStore,
    tenant: &TenantId,
    id: SessionId,
) -> Result<SessionDetail, StoreError> {
    let mut conn = store.pool.acquire().await.map_err(db)?;
    let (session, _) = load_session(&mut conn, tenant, id)
        .await?
        .ok_or_else(DomainError::session_not_found)?;
    let ledger_size = ledger_size(&mut conn, tenant, id).await?;
    Ok(SessionDetail {
        idle: session.is_idle(now_micros(), store.settings.idle_secs),
        session,
        ledger_size,
    })
}

pub(crate) async fn receipts(
    pool: &SqlitePool,
    tenant: &TenantId,
) -> Result<Vec<Receipt>, StoreError> {
    let sql = format!(
        "SELECT {} FROM receipts WHERE tenant_id = ?1 ORDER BY seq",
        rows::RECEIPT_COLUMNS
    );
    let rows = sqlx::query(&sql)
        .bind(tenant.as_str())
        .fetch_all(pool)
        .await
        .map_err(db)?;
    rows.iter().map(|r| rows::receipt(&Cols(r))).collect()
}

pub(crate) async fn session_ledger(
    pool: &SqlitePool,
    tenant: &TenantId,
    session_id: SessionId,
    limit: i64,
) -> Result<Vec<brain_core::model::Artifact>, StoreError> {
    let sql = format!(
        "SELECT {} FROM artifacts WHERE tenant_id = ?1 AND session_id = ?2 \
         ORDER BY created_at, artifact_id LIMIT ?3",
        rows::ARTIFACT_COLUMNS
    );
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(session_id.as_uuid())
        .bind(limit)
        .fetch_all(pool)
        .await
        .map_err(db)?;
    found.iter().map(|r| rows::artifact(&Cols(r))).collect()
}

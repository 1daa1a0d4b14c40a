//! Reads (focus, session, receipts) and the MCP connection registry.

use crate::dialect::Cols;
use brain_core::error::{DomainError, StoreError};
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{Caller, CredentialKind, Focus, Role, now_micros};
use brain_core::operators::{ConnectionUpkeep, connection_upkeep};
use brain_core::receipt::Receipt;
use brain_core::sql::rows;
use brain_core::store::{ConnectionRecord, SessionDetail};
use sqlx::{PgConnection, Row};

use crate::lifecycle::{ledger_size, load_focus, load_session};
use crate::{PgStore, db};

pub(crate) async fn focus(
    store: &PgStore,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<Focus, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let focus = load_focus(&mut tx, tenant, project, slot, false).await?;
    tx.commit().await.map_err(db)?;
    Ok(focus)
}

pub(crate) async fn session_detail(
    store: &PgStore,
    tenant: &TenantId,
    id: SessionId,
) -> Result<SessionDetail, StoreError> {
    let mut conn = store.scoped(tenant).await?;
    let (session, _) = load_session(&mut conn, tenant, id, false)
        .await?
        .ok_or_else(DomainError::session_not_found)?;
    let ledger_size = ledger_size(&mut conn, tenant, id).await?;
    conn.commit().await.map_err(db)?;
    Ok(SessionDetail {
        idle: session.is_idle(now_micros(), store.settings.idle_secs),
        session,
        ledger_size,
    })
}

pub(crate) async fn receipts(
    store: &PgStore,
    tenant: &TenantId,
) -> Result<Vec<Receipt>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let sql = format!(
        "SELECT {} FROM receipts WHERE tenant_id = $1 ORDER BY seq",
        rows::RECEIPT_COLUMNS
    );
    let rows = sqlx::query(&sql)
        .bind(tenant.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    rows.iter().map(|r| rows::receipt(&Cols(r))).collect()
}

/// Record a new connection (its tracer session already inserted).
pub(crate) async fn insert_connection(
    conn: &mut PgConnection,
    caller: &Caller,
    connection_id: &str,
    init_params: Option<serde_json::Value>,
    tracer: SessionId,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO mcp_connections (tenant_id, connection_id, credential_kind, credential_id, \
         opened_at, last_seen_at, init_params, tracer_session_id, role) \
         VALUES ($1,$2,$3,$4,$5,$5,$6,$7,$8)",
    )
    .bind(caller.tenant.as_str())
    .bind(connection_id)
    .bind(caller.kind.as_str())
    .bind(&caller.credential_id)
    .bind(at)
    .bind(init_params)
    .bind(tracer.as_uuid())
    .bind(caller.role.as_str())
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Close a connection's tracer session (on DELETE or expiry).
async fn close_tracer(
    conn: &mut PgConnection,
    tenant: &TenantId,
    tracer: Option<SessionId>,
) -> Result<(), StoreError> {
    let Some(tracer) = tracer else { return Ok(()) };
    let now = now_micros();
    sqlx::query(
        "UPDATE sessions SET status = 'ended', ended_at = $3, last_activity_at = $3 \
         WHERE tenant_id = $1 AND session_id = $2 AND kind = 'tracer' AND status = 'open'",
    )
    .bind(tenant.as_str())
    .bind(tracer.as_uuid())
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// Look a connection up, closing or touching it as
/// [`brain_core::operators::connection_upkeep`] decides.
pub(crate) async fn connection_get(
    store: &PgStore,
    tenant: &TenantId,
    connection_id: &str,
    idle_secs: i64,
) -> Result<Option<ConnectionRecord>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let row = sqlx::query(
        "SELECT credential_kind, credential_id, role, closed_at, last_seen_at, init_params, tracer_session_id \
         FROM mcp_connections WHERE tenant_id = $1 AND connection_id = $2",
    )
    .bind(tenant.as_str())
    .bind(connection_id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let kind: String = row.try_get("credential_kind").map_err(db)?;
    let last_seen: chrono::DateTime<chrono::Utc> = row.try_get("last_seen_at").map_err(db)?;
    let mut record = ConnectionRecord {
        tenant: tenant.clone(),
        credential_kind: CredentialKind::parse(&kind)
            .ok_or_else(|| StoreError::Backend("stored credential kind does not parse".into()))?,
        credential_id: row.try_get("credential_id").map_err(db)?,
        role: Role::parse(&row.try_get::<String, _>("role").map_err(db)?)
            .ok_or_else(|| StoreError::Backend("stored role does not parse".into()))?,
        closed: row
            .try_get::<Option<chrono::DateTime<chrono::Utc>>, _>("closed_at")
            .map_err(db)?
            .is_some(),
        init_params: row.try_get("init_params").map_err(db)?,
        tracer_session: row
            .try_get::<Option<uuid::Uuid>, _>("tracer_session_id")
            .map_err(db)?
            .map(SessionId::from_uuid),
    };
    if record.closed {
        tx.commit().await.map_err(db)?;
        return Ok(Some(record));
    }
    let now = now_micros();
    match connection_upkeep(last_seen, now, idle_secs) {
        ConnectionUpkeep::Close => {
            close_in(&mut tx, tenant, connection_id).await?;
            record.closed = true;
        }
        ConnectionUpkeep::Touch => {
            sqlx::query(
                "UPDATE mcp_connections SET last_seen_at = $3 \
                 WHERE tenant_id = $1 AND connection_id = $2 AND closed_at IS NULL",
            )
            .bind(tenant.as_str())
            .bind(connection_id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        ConnectionUpkeep::Keep => {}
    }
    tx.commit().await.map_err(db)?;
    Ok(Some(record))
}

pub(crate) async fn connection_close(
    store: &PgStore,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<(), StoreError> {
    let mut tx = store.scoped(tenant).await?;
    close_in(&mut tx, tenant, connection_id).await?;
    tx.commit().await.map_err(db)
}

async fn close_in(
    conn: &mut PgConnection,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<(), StoreError> {
    let tracer: Option<Option<uuid::Uuid>> = sqlx::query_scalar(
        "UPDATE mcp_connections SET closed_at = COALESCE(closed_at, $3) \
         WHERE tenant_id = $1 AND connection_id = $2 RETURNING tracer_session_id",
    )
    .bind(tenant.as_str())
    .bind(connection_id)
    .bind(now_micros())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    close_tracer(conn, tenant, tracer.flatten().map(SessionId::from_uuid)).await
}

/// Open connections of one credential that are still within the idle limit.
pub(crate) async fn connection_open_count(
    store: &PgStore,
    tenant: &TenantId,
    kind: CredentialKind,
    credential_id: &str,
    role: Role,
    idle_secs: i64,
) -> Result<(i64, i64), StoreError> {
    let now = now_micros();
    let mut tx = store.scoped(tenant).await?;
    let counts: (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE credential_kind = $2 AND credential_id = $3 AND role = $5), \
                count(*) \
         FROM mcp_connections WHERE tenant_id = $1 AND closed_at IS NULL AND last_seen_at > $4",
    )
    .bind(tenant.as_str())
    .bind(kind.as_str())
    .bind(credential_id)
    .bind(now - chrono::Duration::seconds(idle_secs))
    .bind(role.as_str())
    .fetch_one(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(counts)
}

/// Close every connection unused past the idle limit, and its tracer.
pub(crate) async fn connection_expire(
    store: &PgStore,
    idle_secs: i64,
) -> Result<Vec<(TenantId, String)>, StoreError> {
    let now = now_micros();
    // System scope, audited here: the sweep spans tenants by design.
    let mut tx = store.system().await?;
    let rows = sqlx::query(
        "UPDATE mcp_connections SET closed_at = $1 \
         WHERE closed_at IS NULL AND last_seen_at <= $2 \
         RETURNING tenant_id, connection_id, tracer_session_id",
    )
    .bind(now)
    .bind(now - chrono::Duration::seconds(idle_secs))
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let mut closed = Vec::with_capacity(rows.len());
    for row in rows {
        let tenant: String = row.try_get("tenant_id").map_err(db)?;
        let Ok(tenant) = TenantId::parse(&tenant) else {
            continue;
        };
        let id: String = row.try_get("connection_id").map_err(db)?;
        let tracer: Option<uuid::Uuid> = row.try_get("tracer_session_id").map_err(db)?;
        close_tracer(&mut tx, &tenant, tracer.map(SessionId::from_uuid)).await?;
        closed.push((tenant, id));
    }
    tx.commit().await.map_err(db)?;
    Ok(closed)
}

pub(crate) async fn session_started_on(
    store: &PgStore,
    tenant: &TenantId,
    connection_id: &str,
) -> Result<Option<SessionId>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let found: Option<uuid::Uuid> = sqlx::query_scalar(
        "SELECT session_id FROM receipts WHERE tenant_id = $1 AND connection_id = $2 \
         AND tool = 'brain_session_start' AND outcome = 'ok' ORDER BY seq DESC LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(connection_id)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?
    .flatten();
    tx.commit().await.map_err(db)?;
    Ok(found.map(SessionId::from_uuid))
}

pub(crate) async fn runtime_expire(store: &PgStore, max_idle_secs: i64) -> Result<u64, StoreError> {
    let now = now_micros();
    // System scope, audited here: the expiry of raw runtime sessions spans tenants.
    let mut tx = store.system().await?;
    let done = sqlx::query(
        "UPDATE sessions SET status = 'abandoned', ended_at = $1, last_activity_at = $1, \
         abandon_reason = 'expired: no close within the runtime session lifetime' \
         WHERE project = $2 AND kind = 'agent' AND status = 'open' AND last_activity_at <= $3",
    )
    .bind(now)
    .bind(ProjectKey::RUNTIME)
    .bind(now - chrono::Duration::seconds(max_idle_secs))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(done.rows_affected())
}

pub(crate) async fn session_ledger(
    store: &PgStore,
    tenant: &TenantId,
    session_id: SessionId,
    limit: i64,
) -> Result<Vec<brain_core::model::Artifact>, StoreError> {
    let sql = format!(
        "SELECT {} FROM artifacts WHERE tenant_id = $1 AND session_id = $2 \
         ORDER BY created_at, artifact_id LIMIT $3",
        rows::ARTIFACT_COLUMNS
    );
    let mut tx = store.scoped(tenant).await?;
    let found = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(session_id.as_uuid())
        .bind(limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
    tx.commit().await.map_err(db)?;
    found.iter().map(|r| rows::artifact(&Cols(r))).collect()
}

//! The operator console's reads (SPEC §4 `/brain-admin/`): projects with their
//! activity, an operator's own elevation targets, mental-model names.

use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::Caller;
use brain_core::store::{OperatorTargets, ProjectSummary};

use crate::{PgStore, db};

pub(crate) async fn projects(
    store: &PgStore,
    tenant: &TenantId,
    search: Option<&str>,
    limit: i64,
) -> Result<Vec<ProjectSummary>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let rows: Vec<(String, i64, i64, i64, Option<i64>)> = sqlx::query_as(
        "SELECT p.project, COALESCE(f.revision, 0), \
           (SELECT count(*) FROM sessions s WHERE s.tenant_id = p.tenant_id AND s.project = p.project \
              AND s.kind = 'agent' AND s.status = 'open'), \
           (SELECT count(*) FROM sessions s WHERE s.tenant_id = p.tenant_id AND s.project = p.project \
              AND s.kind = 'agent' AND s.status = 'open' \
              AND s.last_activity_at < now() - make_interval(secs => $3)), \
           (SELECT (extract(epoch FROM max(s.last_activity_at)) * 1000000)::bigint FROM sessions s \
              WHERE s.tenant_id = p.tenant_id AND s.project = p.project AND s.kind = 'agent') \
         FROM projects p LEFT JOIN focus_bodies f \
           ON f.tenant_id = p.tenant_id AND f.project = p.project AND f.slot = '' \
         WHERE p.tenant_id = $1 AND p.project NOT IN ($5, $6) \
           AND ($2::text IS NULL OR strpos(p.project, $2) > 0) \
         ORDER BY p.project LIMIT $4",
    )
    .bind(tenant.as_str())
    .bind(search)
    .bind(store.settings.idle_secs as f64)
    .bind(limit)
    .bind(ProjectKey::TRACERS)
    .bind(ProjectKey::RUNTIME)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(rows
        .into_iter()
        .filter_map(ProjectSummary::from_row)
        .collect())
}

pub(crate) async fn operator_targets(
    store: &PgStore,
    caller: &Caller,
) -> Result<OperatorTargets, StoreError> {
    let mut tx = store.scoped(&caller.tenant).await?;
    let connections: Vec<String> = sqlx::query_scalar(
        "SELECT connection_id FROM mcp_connections WHERE tenant_id = $1 AND credential_kind = 'jwt' \
         AND credential_id = $2 AND role = 'operator' AND closed_at IS NULL \
         ORDER BY opened_at DESC LIMIT 50",
    )
    .bind(caller.tenant.as_str())
    .bind(&caller.credential_id)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    let sessions: Vec<(uuid::Uuid, String)> = sqlx::query_as(
        "SELECT session_id, project FROM sessions WHERE tenant_id = $1 AND kind = 'agent' \
         AND status = 'open' AND opened_by_credential = $2 AND opened_by_role = 'operator' \
         ORDER BY opened_at DESC LIMIT 50",
    )
    .bind(caller.tenant.as_str())
    .bind(&caller.credential_id)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(OperatorTargets::from_rows(connections, sessions))
}

pub(crate) async fn mental_model_names(
    store: &PgStore,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<Vec<String>, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM documents WHERE tenant_id = $1 AND project = $2 \
         AND kind = 'mental_model' ORDER BY name LIMIT 200",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(names)
}

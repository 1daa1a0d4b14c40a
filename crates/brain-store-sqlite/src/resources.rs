//! Focus bodies as MCP resources (SPEC §2.11). Changes are announced in
//! process after each end's or relay's commit (`SqliteStore::announce`).

use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::store::FocusResource;

use crate::{SqliteStore, db, ledger};

pub(crate) async fn list(
    store: &SqliteStore,
    tenant: &TenantId,
    after: Option<(&ProjectKey, Option<&SlotName>)>,
    limit: i64,
) -> Result<Vec<FocusResource>, StoreError> {
    let (p, s) = after.map_or(("", ""), |(p, s)| (p.as_str(), ledger::slot_key(s)));
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT project, slot, revision FROM focus_bodies \
         WHERE tenant_id = ?1 AND project NOT IN (?2, ?3) AND (project, slot) > (?4, ?5) \
         ORDER BY project, slot LIMIT ?6",
    )
    .bind(tenant.as_str())
    .bind(ProjectKey::TRACERS)
    .bind(ProjectKey::RUNTIME)
    .bind(p)
    .bind(s)
    .bind(limit)
    .fetch_all(store.pool())
    .await
    .map_err(db)?;
    Ok(rows
        .into_iter()
        .filter_map(FocusResource::from_row)
        .collect())
}

pub(crate) async fn exists(
    store: &SqliteStore,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<bool, StoreError> {
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM focus_bodies WHERE tenant_id = ?1 AND project = ?2 AND slot = ?3",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(ledger::slot_key(slot))
    .fetch_optional(store.pool())
    .await
    .map_err(db)?;
    Ok(found.is_some())
}

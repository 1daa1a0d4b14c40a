//! Focus bodies as MCP resources (SPEC §2.11): the listing, and the one
//! LISTEN connection per replica that hears every replica's committed writes
//! (`write_focus` NOTIFYs in the writing transaction).

use std::time::Duration;

use brain_core::error::StoreError;
use brain_core::feed::{FocusChange, FocusListener};
use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::store::FocusResource;
use sqlx::postgres::PgListener;

use crate::{PgStore, db, ledger};

pub(crate) const CHANNEL: &str = "brain_focus";

pub(crate) async fn list(
    store: &PgStore,
    tenant: &TenantId,
    after: Option<(&ProjectKey, Option<&SlotName>)>,
    limit: i64,
) -> Result<Vec<FocusResource>, StoreError> {
    let (p, s) = after.map_or(("", ""), |(p, s)| (p.as_str(), ledger::slot_key(s)));
    let mut tx = store.scoped(tenant).await?;
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT project, slot, revision FROM focus_bodies \
         WHERE tenant_id = $1 AND project NOT IN ($2, $3) AND (project, slot) > ($4, $5) \
         ORDER BY project, slot LIMIT $6",
    )
    .bind(tenant.as_str())
    .bind(ProjectKey::TRACERS)
    .bind(ProjectKey::RUNTIME)
    .bind(p)
    .bind(s)
    .bind(limit)
    .fetch_all(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(rows
        .into_iter()
        .filter_map(FocusResource::from_row)
        .collect())
}

pub(crate) async fn exists(
    store: &PgStore,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
) -> Result<bool, StoreError> {
    let mut tx = store.scoped(tenant).await?;
    let found: Option<i32> = sqlx::query_scalar(
        "SELECT 1 FROM focus_bodies WHERE tenant_id = $1 AND project = $2 AND slot = $3",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(ledger::slot_key(slot))
    .fetch_optional(&mut *tx)
    .await
    .map_err(db)?;
    tx.commit().await.map_err(db)?;
    Ok(found.is_some())
}

/// Start the replica's listener task. sqlx's `PgListener` reconnects by
/// itself after a lost connection; changes committed while it was away are
/// not replayed (a subscriber re-reads on reconnecting, as MCP clients do).
pub(crate) async fn watch(store: &PgStore, listener: FocusListener) -> Result<(), StoreError> {
    let mut pg = PgListener::connect_with(store.pool()).await.map_err(db)?;
    pg.listen(CHANNEL).await.map_err(db)?;
    tokio::spawn(async move {
        loop {
            match pg.recv().await {
                Ok(n) => match FocusChange::from_payload(n.payload()) {
                    Some(change) => listener(change),
                    None => tracing::warn!("ignored a malformed focus notification"),
                },
                // The pool is closing (shutdown): let its connection go, or
                // `Pool::close` would wait for it forever.
                Err(sqlx::Error::PoolClosed) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "focus listener lost its connection; reconnecting");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    });
    Ok(())
}

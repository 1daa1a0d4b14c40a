//! A todo acknowledgement's statements on PostgreSQL: the todos locked,
//! then acknowledged, each in one statement for all the ids.

use brain_core::error::StoreError;
use brain_core::ids::{ArtifactId, ProjectKey, TenantId};
use brain_core::model::ArtifactKind;
use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::db;

/// Each of `ids` that is an artifact of the project: its kind and whether
/// it is acknowledged, locked.
pub(super) async fn lock_todos(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    ids: &[ArtifactId],
) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
    let uuids: Vec<uuid::Uuid> = ids.iter().map(|i| i.as_uuid()).collect();
    let rows: Vec<(uuid::Uuid, String, bool)> = sqlx::query_as(
        // Locked: an acknowledgement that commits meanwhile would
        // otherwise be answered as this one's (SPEC §2.7); in id order,
        // so two acks of overlapping ids lock in the same order.
        "SELECT artifact_id, kind, acknowledged_at IS NOT NULL FROM artifacts \
         WHERE tenant_id = $1 AND project = $2 AND artifact_id = ANY($3) \
         ORDER BY artifact_id FOR UPDATE",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(&uuids)
    .fetch_all(conn)
    .await
    .map_err(db)?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, kind, ack)| {
            ArtifactKind::parse(&kind).map(|k| (ArtifactId::from_uuid(id), k, ack))
        })
        .collect())
}

/// Acknowledge the open todos among `ids` at `at`, with `note`.
pub(super) async fn acknowledge(
    conn: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    ids: &[ArtifactId],
    note: Option<&str>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    if ids.is_empty() {
        return Ok(());
    }
    let uuids: Vec<uuid::Uuid> = ids.iter().map(|i| i.as_uuid()).collect();
    sqlx::query(
        "UPDATE artifacts SET acknowledged_at = $4, ack_note = $5 \
         WHERE tenant_id = $1 AND project = $2 AND artifact_id = ANY($3) \
         AND kind = 'todo' AND acknowledged_at IS NULL",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(&uuids)
    .bind(at)
    .bind(note)
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(())
}

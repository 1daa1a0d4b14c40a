//! The artifact insert of `brain_remember` (its algorithm is `brain_core::flow`).

use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::model::Artifact;
use sqlx::PgConnection;

use crate::db;

pub(crate) async fn insert_artifact(
    conn: &mut PgConnection,
    tenant: &TenantId,
    artifact: &Artifact,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, text, tags, created_at) \
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
    )
    .bind(tenant.as_str())
    .bind(artifact.artifact_id.as_uuid())
    .bind(artifact.project.as_str())
    .bind(artifact.session_id.map(|s| s.as_uuid()))
    .bind(artifact.kind.as_str())
    .bind(&artifact.text)
    .bind(&artifact.tags)
    .bind(artifact.created_at)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

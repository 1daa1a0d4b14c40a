//! Recording artifacts (`brain_remember`): the algorithm is `brain_core::flow`.

use brain_core::error::StoreError;
use brain_core::ids::TenantId;
use brain_core::model::{Artifact, Caller};
use brain_core::requests::RememberRequest;
use sqlx::SqliteConnection;

use crate::rows::micros;
use crate::{SqliteStore, db};

pub(crate) async fn remember(
    store: &SqliteStore,
    caller: &Caller,
    req: RememberRequest,
) -> Result<Artifact, StoreError> {
    brain_core::flow::remember(crate::tx::Tx(store.write().await?), caller, req).await
}

pub(crate) async fn insert_artifact(
    conn: &mut SqliteConnection,
    tenant: &TenantId,
    artifact: &Artifact,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, text, tags, created_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    )
    .bind(tenant.as_str())
    .bind(artifact.artifact_id.as_uuid())
    .bind(artifact.project.as_str())
    .bind(artifact.session_id.map(|s| s.as_uuid()))
    .bind(artifact.kind.as_str())
    .bind(&artifact.text)
    .bind(serde_json::to_string(&artifact.tags).map_err(StoreError::backend)?)
    .bind(micros(artifact.created_at))
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(())
}

pub(crate) async fn todo_ack(
    store: &SqliteStore,
    caller: &Caller,
    req: brain_core::requests::TodoAckRequest,
) -> Result<brain_core::requests::TodoAckOutcome, StoreError> {
    brain_core::flow::todo_ack(crate::tx::Tx(store.write().await?), caller, &req).await
}

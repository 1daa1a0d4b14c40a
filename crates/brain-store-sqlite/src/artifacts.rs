//! Recording artifacts (`brain_remember`), with derived capture into a session's ledger.

use brain_core::error::{DomainError, StoreError};
use brain_core::ids::ArtifactId;
use brain_core::model::{Artifact, Caller, now_micros};
use brain_core::requests::RememberRequest;
use brain_core::rules;

use crate::lifecycle::load_session;
use crate::rows::micros;
use crate::{SqliteStore, db, ledger};

pub(crate) async fn remember(
    store: &SqliteStore,
    caller: &Caller,
    req: RememberRequest,
) -> Result<Artifact, StoreError> {
    const TOOL: &str = "brain_remember";
    let tenant = &caller.tenant;
    let mut tx = store.write().await?;
    let now = now_micros();
    let session_id = match &req.session {
        None => None,
        Some((id, key)) => {
            // Locked so the session cannot close between this check and the insert.
            let loaded = load_session(&mut tx, tenant, *id).await?;
            let checked = rules::check_session(loaded.as_ref().map(|l| &l.0), key)
                .and_then(|s| rules::require_open(s).map(|()| s))
                .and_then(|s| {
                    if s.project == req.project {
                        Ok(s)
                    } else {
                        Err(DomainError::invalid_argument(
                            "project",
                            format!("must be the session's project ({})", s.project),
                        ))
                    }
                });
            if let Err(e) = checked {
                let d = ledger::draft(TOOL, Some(&req.project), Some(*id), &req.digest, Err(&e));
                return ledger::refuse(tx, caller, d, e).await;
            }
            sqlx::query(
                "UPDATE sessions SET last_activity_at = ?3 WHERE tenant_id = ?1 AND session_id = ?2",
            )
            .bind(tenant.as_str())
            .bind(id.as_uuid())
            .bind(micros(now))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            Some(*id)
        }
    };
    ledger::ensure_tenant(&mut tx, tenant).await?;
    ledger::ensure_project(&mut tx, tenant, &req.project).await?;
    let artifact = Artifact {
        artifact_id: ArtifactId::new_random(),
        project: req.project.clone(),
        session_id,
        kind: req.kind,
        text: req.text,
        tags: req.tags,
        created_at: now,
    };
    sqlx::query(
        "INSERT INTO artifacts (tenant_id, artifact_id, project, session_id, kind, text, tags, created_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
    )
    .bind(tenant.as_str())
    .bind(artifact.artifact_id.as_uuid())
    .bind(artifact.project.as_str())
    .bind(session_id.map(|s| s.as_uuid()))
    .bind(artifact.kind.as_str())
    .bind(&artifact.text)
    .bind(serde_json::to_string(&artifact.tags).map_err(StoreError::backend)?)
    .bind(micros(artifact.created_at))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    ledger::append(
        &mut tx,
        caller,
        ledger::draft(TOOL, Some(&req.project), session_id, &req.digest, Ok(())),
    )
    .await?;
    tx.commit().await.map_err(db)?;
    Ok(artifact)
}

//! What an agent leaves between sessions: remember (SPEC §2.7) and the
//! acknowledgement of todos.

use super::{WriteTx, draft, refuse};

use crate::error::{DomainError, StoreError};
use crate::ids::ArtifactId;
use crate::model::{Artifact, ArtifactKind, Caller, now_micros};
use crate::requests::RememberRequest;
use crate::requests::{TodoAckOutcome, TodoAckRequest};
use crate::rules::{self};

/// Remember (SPEC §2.7): with a session, the artifact joins its ledger once the
/// session checks pass (and the session is kept locked until the insert).
pub async fn remember<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: RememberRequest,
) -> Result<Artifact, StoreError> {
    const TOOL: &str = "brain_remember";
    let now = now_micros();
    let session_id = match &req.session {
        None => None,
        Some((id, key)) => {
            let loaded = tx.lock_session(*id).await?;
            let checked = rules::check_session(
                loaded.as_ref().map(|l| &l.0),
                key,
                caller,
                rules::Door::Brain,
            )
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
                let d = draft(TOOL, Some(&req.project), Some(*id), &req.digest, Err(&e));
                return refuse(tx, caller, false, d, e).await;
            }
            tx.touch_session(*id, now, None).await?;
            Some(*id)
        }
    };
    let artifact = Artifact {
        artifact_id: ArtifactId::new_random(),
        project: req.project.clone(),
        session_id,
        kind: req.kind,
        text: req.text,
        tags: req.tags,
        created_at: now,
        acknowledged_at: None,
        ack_note: None,
    };
    let d = draft(TOOL, Some(&req.project), session_id, &req.digest, Ok(()));
    tx.remember(caller, &artifact, d).await?;
    tx.commit(None).await?;
    Ok(artifact)
}

/// `brain_todo_ack` (SPEC §2.7): acknowledge todos so they leave the inbox, in
/// one transaction with one receipt; repeating it changes nothing more.
pub async fn todo_ack<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &TodoAckRequest,
) -> Result<TodoAckOutcome, StoreError> {
    tx.provision(None).await?;
    let states = tx.lock_todos(&req.project, &req.artifact_ids).await?;
    let mut out = TodoAckOutcome::default();
    for id in &req.artifact_ids {
        match states.iter().find(|(found, _, _)| found == id) {
            Some((_, ArtifactKind::Todo, false)) => out.acknowledged.push(*id),
            Some((_, ArtifactKind::Todo, true)) => out.already_acknowledged.push(*id),
            _ => out.not_todos.push(*id),
        }
    }
    let note = req.note.as_deref();
    out.inbox_count = tx
        .acknowledge(&req.project, &out.acknowledged, note, now_micros())
        .await?;
    let d = draft(
        "brain_todo_ack",
        Some(&req.project),
        None,
        &req.digest,
        Ok(()),
    );
    tx.commit(Some((caller, d))).await?;
    Ok(out)
}

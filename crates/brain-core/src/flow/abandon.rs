//! Abandon (SPEC §2.6): a session closed without a focus write.

use serde_json::Value;

use super::{CloseWrite, StoredNextFocus, WriteTx, draft, refuse};
use crate::error::{DomainError, StoreError};
use crate::model::{Caller, SessionStatus, now_micros};
use crate::outcome::{AbandonResult, as_replay};
use crate::requests::AbandonRequest;
use crate::rules;

/// Abandon (SPEC §2.6): steps 1–3, a non-blank reason, consent; no focus write.
pub async fn abandon<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &AbandonRequest,
) -> Result<Value, StoreError> {
    const TOOL: &str = "brain_session_abandon";
    let loaded = tx.lock_session(req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.0.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        let id = Some(req.session_id);
        draft(TOOL, project.as_ref(), id, &req.digest, outcome)
    };
    let (mut session, close_record) = match rules::check_session(
        loaded.as_ref().map(|l| &l.0),
        &req.expected_client_key,
        caller,
        rules::Door::Brain,
    ) {
        Ok(s) => (s.clone(), loaded.as_ref().and_then(|l| l.1.clone())),
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    };
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => {
            tx.finish_read().await?;
            return Ok(as_replay(stored, None));
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    if let Err(e) = rules::check_abandon(&req.reason, req.confirm, req.dry_run) {
        return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
    }
    let now = now_micros();
    session.status = SessionStatus::Abandoned;
    session.ended_at = Some(now);
    session.last_activity_at = now;
    session.abandon_reason = Some(req.reason.clone());
    let result = AbandonResult {
        session: session.clone(),
        replayed: false,
        dry_run: req.dry_run,
        would: req.dry_run.then_some("abandoned"),
    };
    let value = serde_json::to_value(result).map_err(StoreError::backend)?;
    if req.dry_run {
        tx.finish_read().await?;
        return Ok(value);
    }
    let write = CloseWrite {
        session: &session,
        focus: None,
        next_session: None,
        next_focus: StoredNextFocus::of(&session, None, None),
        digest: &req.digest,
        result: &value,
        receipt: draft(Ok(())),
    };
    tx.apply_close(caller, write).await?;
    tx.commit(None).await?;
    Ok(value)
}

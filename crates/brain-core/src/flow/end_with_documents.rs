//! The brain-core profile's end (`brain_session`, phase `end`): the
//! project's documents replaced whole and the session closed without
//! touching its focus, in one transaction with one receipt (SPEC §3.3). A
//! session already closed (by this end before, or another way) has its
//! documents replaced all the same.

use serde_json::Value;

use super::close::{Closing, check_loaded, decide_and_apply};
use super::documents::{lock_for_replace, write_documents};
use super::{WriteTx, draft, refuse};
use crate::error::{DomainError, ErrorCode, StoreError};
use crate::memory::DocumentKind;
use crate::model::{Caller, Revision};
use crate::requests::EndRequest;
use crate::rules::CloseKind;

const TOOL: &str = "brain_session";

/// What [`end_with_documents`] did: the close's answer when this call
/// closed the session, and each document's revision as written, in the
/// order given.
#[derive(Debug)]
pub struct EndedWithDocuments {
    pub closed: Option<Value>,
    pub revisions: Vec<Revision>,
}

/// Replace `bodies` whole and close the session `req` names (a
/// `keep_focus` end): steps 1–3 of the close first, so a session the caller
/// may not end writes nothing but the refusal's receipt.
pub async fn end_with_documents<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &EndRequest,
    bodies: &[(DocumentKind, String)],
) -> Result<EndedWithDocuments, StoreError> {
    let loaded = tx.lock_close(req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.session.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        let id = Some(req.session_id);
        draft(TOOL, project.as_ref(), id, &req.digest, outcome)
    };
    let checked = check_loaded(loaded.as_ref(), req, caller);
    let (l, open) = match (loaded, checked) {
        (Some(l), Ok(stored)) => (l, stored.is_none()),
        (Some(l), Err(e)) if e.code == ErrorCode::SessionClosed => (l, false),
        (_, Err(e)) => return refuse(tx, caller, false, draft(Err(&e)), e).await,
        (None, Ok(_)) => return Err(StoreError::Backend("an end checked no session".into())),
    };
    let project = l.session.project.clone();
    let documents = lock_for_replace(&mut tx, caller, &project, bodies).await?;
    let revisions = documents.iter().map(|d| d.revision).collect();
    if open {
        let closing = Closing {
            kind: CloseKind::End,
            tool: TOOL,
            relay_to: None,
            documents,
        };
        let closed = decide_and_apply(tx, caller, req, l, closing).await?;
        return Ok(EndedWithDocuments {
            closed: Some(closed),
            revisions,
        });
    }
    write_documents(&mut tx, &project, &documents).await?;
    tx.commit(Some((caller, draft(Ok(()))))).await?;
    Ok(EndedWithDocuments {
        closed: None,
        revisions,
    })
}

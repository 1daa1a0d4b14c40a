//! `brain_document_put` (SPEC §2.9): compare-and-swap on a document's revision.

use super::{CloseTx, commit_with_receipt, draft, refuse};
use crate::error::StoreError;
use crate::memory::{
    Document, DocumentKind, DocumentPut, MAX_MENTAL_MODELS, check_document_put, document_conflict,
    too_many_mental_models,
};
use crate::model::{Caller, now_micros};

const TOOL: &str = "brain_document_put";

/// Replace the document if `expected_revision` is its current one; a refusal
/// (a caller who may not write it, a stale revision) writes only its receipt.
pub async fn document_put<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    put: &DocumentPut,
) -> Result<Document, StoreError> {
    let tenant = &caller.tenant;
    let receipt = |r| draft(TOOL, Some(&put.project), None, &put.digest, r);
    if let Err(e) = check_document_put(caller, put) {
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    tx.ensure_project(tenant, &put.project).await?;
    let current = tx
        .lock_document(tenant, &put.project, put.kind, &put.name)
        .await?;
    if current.revision != put.expected_revision {
        let e = document_conflict(current.revision);
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    // A new model makes every briefing of the project longer: the count is
    // bounded (replacing a model's body is always allowed).
    if put.kind == DocumentKind::MentalModel && current.revision == 0 {
        let held = tx.claim_mental_models(tenant, &put.project).await?;
        // A writer of the same new name may have gone first while the claim
        // waited: this put is then stale, not one model too many.
        let now = tx
            .lock_document(tenant, &put.project, put.kind, &put.name)
            .await?;
        if now.revision != put.expected_revision {
            let e = document_conflict(now.revision);
            return refuse(tx, caller, false, receipt(Err(&e)), e).await;
        }
        if held >= MAX_MENTAL_MODELS {
            let e = too_many_mental_models();
            return refuse(tx, caller, false, receipt(Err(&e)), e).await;
        }
    }
    let doc = Document {
        kind: put.kind,
        name: put.name.clone(),
        body: put.body.clone(),
        revision: current.revision + 1,
        updated_at: Some(now_micros()),
        updated_by: Some(caller.subject.clone()),
    };
    if !tx.write_document(tenant, &put.project, &doc).await? {
        // Created by another writer since it was read as absent: its row is
        // there to read now.
        let current = tx
            .lock_document(tenant, &put.project, put.kind, &put.name)
            .await?;
        let e = document_conflict(current.revision);
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    commit_with_receipt(tx, caller, receipt(Ok(()))).await?;
    Ok(doc)
}

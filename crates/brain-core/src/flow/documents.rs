//! `brain_document_put` (SPEC §2.9): compare-and-swap on a document's revision.

use super::{DocumentLock, WriteTx, draft, refuse};
use crate::error::StoreError;
use crate::ids::ProjectKey;
use crate::memory::{
    Document, DocumentKind, DocumentPut, MAX_MENTAL_MODELS, check_document_put, document_conflict,
    too_many_mental_models,
};
use crate::model::{Caller, now_micros};

const TOOL: &str = "brain_document_put";

/// Replace the document if `expected_revision` is its current one; a refusal
/// (a caller who may not write it, a stale revision) writes only its receipt.
pub async fn document_put<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    put: &DocumentPut,
) -> Result<Document, StoreError> {
    let receipt = |r| draft(TOOL, Some(&put.project), None, &put.digest, r);
    if let Err(e) = check_document_put(caller, put) {
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    tx.provision(Some(&put.project)).await?;
    // The document first: a stale put is refused before it claims anything
    // (a claim taken before the document's lock could wait in a cycle with
    // a project's deletion, which deletes documents before the project).
    let (project, kind, name) = (&put.project, put.kind, put.name.as_str());
    let mut lock = tx.lock_document(project, kind, name, false).await?;
    if lock.current.revision != put.expected_revision {
        let e = document_conflict(lock.current.revision);
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    // A new model makes every briefing of the project longer: the count is
    // bounded (replacing a model's body is always allowed), taken with the
    // project claimed so that two new models racing are counted one after
    // the other.
    if kind == DocumentKind::MentalModel && lock.current.revision == 0 {
        lock = tx.lock_document(project, kind, name, true).await?;
        // A writer of the same new name may have gone first while the claim
        // waited: this put is then stale, not one model too many.
        if lock.current.revision != put.expected_revision {
            let e = document_conflict(lock.current.revision);
            return refuse(tx, caller, false, receipt(Err(&e)), e).await;
        }
        if lock
            .mental_models
            .is_some_and(|held| held >= MAX_MENTAL_MODELS)
        {
            let e = too_many_mental_models();
            return refuse(tx, caller, false, receipt(Err(&e)), e).await;
        }
    }
    let DocumentLock { current, .. } = lock;
    let doc = Document {
        kind: put.kind,
        name: put.name.clone(),
        body: put.body.clone(),
        revision: current.revision + 1,
        updated_at: Some(now_micros()),
        updated_by: Some(caller.subject.clone()),
    };
    if !tx.write_document(&put.project, &doc).await? {
        // Created by another writer since it was read as absent: its row is
        // there to read now.
        let now = tx
            .lock_document(&put.project, put.kind, &put.name, false)
            .await?;
        let e = document_conflict(now.current.revision);
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    tx.commit(Some((caller, receipt(Ok(()))))).await?;
    Ok(doc)
}

/// Documents replaced whole over whatever revision is current, locked in
/// this transaction: each as its next revision, for [`write_documents`].
pub(super) async fn lock_for_replace<T: WriteTx>(
    tx: &mut T,
    caller: &Caller,
    project: &ProjectKey,
    bodies: &[(DocumentKind, String)],
) -> Result<Vec<Document>, StoreError> {
    let mut docs = Vec::with_capacity(bodies.len());
    for (kind, body) in bodies {
        let lock = tx.lock_document(project, *kind, "", false).await?;
        docs.push(Document {
            kind: *kind,
            name: String::new(),
            body: body.clone(),
            revision: lock.current.revision + 1,
            updated_at: Some(now_micros()),
            updated_by: Some(caller.subject.clone()),
        });
    }
    Ok(docs)
}

/// Write documents locked by [`lock_for_replace`]. One another writer
/// created since it was locked as absent fails the whole transaction (it is
/// dropped, so nothing of it is written) with `document_conflict`.
pub(super) async fn write_documents<T: WriteTx>(
    tx: &mut T,
    project: &ProjectKey,
    docs: &[Document],
) -> Result<(), StoreError> {
    for doc in docs {
        if !tx.write_document(project, doc).await? {
            let now = tx
                .lock_document(project, doc.kind, &doc.name, false)
                .await?;
            return Err(document_conflict(now.current.revision).into());
        }
    }
    Ok(())
}

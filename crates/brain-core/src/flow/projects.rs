//! Deleting a project (an operator's, from the console, its route or the CLI).

use super::{WriteTx, draft, refuse};
use crate::error::{DomainError, ErrorCode, StoreError};
use crate::ids::ProjectKey;
use crate::model::{Caller, Role};

/// The receipt's `tool`: it records who deleted which project.
pub const PROJECT_DELETED: &str = "project_deleted";

/// Remove every body and text of the project (focus and slot revisions,
/// sessions with their summaries and next focus, artifacts, documents,
/// daily briefs) and the project itself. Its receipts stay: they hold
/// digests, not content, and one more, `project_deleted`, records who
/// deleted it. A refusal (not an operator, no such project) writes only its
/// receipt.
pub async fn project_delete<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    project: &ProjectKey,
    digest: &str,
) -> Result<(), StoreError> {
    let receipt = |r| draft(PROJECT_DELETED, Some(project), None, digest, r);
    if caller.role != Role::Operator {
        let e = DomainError::new(
            ErrorCode::Forbidden,
            "only an operator may delete a project",
        );
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    if project.is_reserved() {
        let e =
            DomainError::invalid_argument("project", "the server's own projects cannot be deleted");
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    if !tx.delete_project(project).await? {
        let e = DomainError::new(
            ErrorCode::NotFound,
            "no such project in this tenant (it may have been deleted already)",
        );
        return refuse(tx, caller, false, receipt(Err(&e)), e).await;
    }
    tx.commit(Some((caller, receipt(Ok(()))))).await
}

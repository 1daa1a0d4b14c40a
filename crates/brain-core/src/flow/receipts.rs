//! A write's receipt: its draft, and a refusal that writes only its receipt.

use super::WriteTx;

use crate::error::{DomainError, StoreError};
use crate::ids::{ProjectKey, SessionId};
use crate::model::Caller;
use crate::receipt::ReceiptDraft;

/// A receipt draft for a call on `tool`.
pub fn draft(
    tool: &str,
    project: Option<&ProjectKey>,
    session_id: Option<SessionId>,
    digest: &str,
    outcome: Result<(), &DomainError>,
) -> ReceiptDraft {
    ReceiptDraft {
        tool: tool.to_owned(),
        project: project.map(|p| p.as_str().to_owned()),
        session_id,
        elevated: false,
        outcome: match outcome {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.code.as_str().to_owned(),
        },
        request_digest: digest.to_owned(),
    }
}

/// A refusal: its receipt only, committed, then the error. On a dry run the
/// bare error, with nothing written.
pub async fn refuse<T: WriteTx, R>(
    mut tx: T,
    caller: &Caller,
    dry_run: bool,
    draft: ReceiptDraft,
    err: DomainError,
) -> Result<R, StoreError> {
    if dry_run {
        tx.finish_read().await?;
    } else {
        tx.provision(None).await?;
        tx.commit(Some((caller, draft))).await?;
    }
    Err(err.into())
}

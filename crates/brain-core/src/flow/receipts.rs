//! A write's receipt: its draft, a refusal that writes only its receipt, and
//! the last step of every write (the receipt after the tenant's tip, then the
//! commit).

use super::CloseTx;

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
pub async fn refuse<T: CloseTx, R>(
    mut tx: T,
    caller: &Caller,
    dry_run: bool,
    draft: ReceiptDraft,
    err: DomainError,
) -> Result<R, StoreError> {
    if dry_run {
        tx.finish_read().await?;
    } else {
        tx.ensure_tenant(&caller.tenant).await?;
        commit_with_receipt(tx, caller, draft).await?;
    }
    Err(err.into())
}

/// A write's last step, accepted or refused: its receipt after the tenant's
/// tip, then the commit.
pub async fn commit_with_receipt<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    draft: ReceiptDraft,
) -> Result<(), StoreError> {
    tx.append_receipt(caller, draft, None).await?;
    tx.commit().await
}

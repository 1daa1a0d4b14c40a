//! Checking a tenant's receipt chain against its tip, a page at a time.

use crate::error::StoreError;
use crate::ids::TenantId;
use crate::receipt::Receipt;

use super::{ReceiptQuery, Store};

/// What [`verify_receipts`] found: `Ok((count, tip seq, tip hash))`, or the
/// first bad seq and why.
pub type ChainVerdict = Result<(usize, i64, String), (i64, crate::receipt::ChainFault)>;

/// Receipts read per page by [`verify_receipts`].
pub const VERIFY_PAGE: i64 = 1000;

/// Check `tenant`'s receipt chain against its recorded tip (`brain receipts
/// verify`, the console's check), `page` receipts at a time: memory is one
/// page's, whatever the chain's length. The tip is read first, and the chain
/// up to it: a receipt written in between is not part of what is checked,
/// rather than a false `seq_gap`. A receipt past the tip must be one the tip
/// has reached since (a receipt and its tip commit together); otherwise the
/// tip was wound back or deleted, and that is a `seq_gap` after it.
pub async fn verify_receipts(
    store: &dyn Store,
    tenant: &TenantId,
    page: i64,
) -> Result<ChainVerdict, StoreError> {
    let (tip_seq, tip_hash) = store.ledger_tip(tenant).await?;
    let mut check = crate::receipt::ChainCheck::default();
    while check.checked_to() < tip_seq {
        let after = check.checked_to();
        let q = ReceiptQuery {
            project: None,
            session_id: None,
            after_seq: after,
            before_seq: None,
            until_seq: None,
            limit: page.clamp(1, tip_seq - after),
        };
        let found = store.receipts_page(tenant, &q).await?;
        let upto_tip: Vec<&Receipt> = found.iter().filter(|r| r.seq <= tip_seq).collect();
        if upto_tip.is_empty() {
            break;
        }
        if let Err(bad) = check.feed(upto_tip) {
            return Ok(Err(bad));
        }
    }
    let count = match check.finish((tip_seq, &tip_hash)) {
        Ok(n) => n,
        Err(bad) => return Ok(Err(bad)),
    };
    let past = ReceiptQuery {
        project: None,
        session_id: None,
        after_seq: tip_seq,
        before_seq: None,
        until_seq: None,
        limit: 1,
    };
    if let Some(r) = store.receipts_page(tenant, &past).await?.first() {
        let (now, _) = store.ledger_tip(tenant).await?;
        if now < r.seq {
            return Ok(Err((tip_seq + 1, crate::receipt::ChainFault::SeqGap)));
        }
    }
    Ok(Ok((count, tip_seq, tip_hash)))
}

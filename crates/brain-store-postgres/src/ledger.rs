//! Tenant and project bootstrap, and receipts appended under the ledger-tip lock.

use brain_core::error::StoreError;
use brain_core::flow::FocusWrite;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::now_micros;
use brain_core::receipt::{GENESIS_HASH, Receipt};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use crate::db;

/// Create the tenant (with its ledger tip) and the project (with its empty
/// base focus at revision 0) on first use, in one call of
/// `brain_ensure_project` (which does not wait on the tip's holder).
pub(crate) async fn ensure_project(
    tx: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<(), StoreError> {
    sqlx::query("SELECT brain_ensure_project($1, $2, $3, $4)")
        .bind(tenant.as_str())
        .bind(GENESIS_HASH)
        .bind(project.as_str())
        .bind(now_micros())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    Ok(())
}

/// Places the receipt `pending` left in `brain.receipt`
/// (`brain_place_pending`): locks the tip, hashes the receipt's canonical text
/// with it, writes the receipt, the history row if any, and the new tip. No
/// parameters, so it is sent with the `COMMIT` as one simple query.
pub(crate) const PLACE_PENDING: &str = "SELECT seq, prev_hash, hash FROM brain_place_pending()";

/// What `brain_place_pending` reads: the receipt's fields, the three pieces of
/// its canonical text (`Receipt::frame`) and the focus history row it names,
/// with its body: the focus row the transaction wrote names the revision and
/// holds no text (`focus_body!`), so the body crosses the wire once, here.
pub(crate) fn pending(
    r: &Receipt,
    history: Option<FocusWrite<'_>>,
) -> Result<serde_json::Value, StoreError> {
    // The stored form of each field (bare UUIDs, the kind's name), not the
    // answer form `Receipt`'s Serialize writes (prefixed ids); `at` is the text
    // its hash frames.
    let frame = r.frame();
    let mut v = serde_json::json!({
        "tenant": r.tenant.as_str(),
        "receipt_id": r.receipt_id.as_uuid(),
        "at": brain_core::model::rfc3339(&r.at),
        "tool": r.tool,
        "project": r.project,
        "session_id": r.session_id.map(|s| s.as_uuid()),
        "credential_kind": r.credential_kind.as_str(),
        "subject": r.subject,
        "token_id": r.token_id,
        "connection_id": r.connection_id,
        "elevated": r.elevated,
        "outcome": r.outcome,
        "request_digest": r.request_digest,
        "before_prev": frame.before_prev,
        "before_seq": frame.before_seq,
        "after_seq": frame.after_seq,
    });
    if let Some(w) = history {
        v["history"] = serde_json::json!({
            "project": w.session.project.as_str(),
            "slot": brain_store_sqlx::sql::sessions::slot_key(w.session.bound_slot.as_ref()),
            "revision": w.revision,
            "body": w.body,
            "session_id": w.session.session_id.as_uuid(),
            "at": brain_core::model::rfc3339(&w.at),
        });
    }
    Ok(v)
}

/// The receipt at the place `brain_place_pending` gave it (`row`).
pub(crate) fn placed_row(r: Receipt, row: Option<&PgRow>) -> Result<Receipt, StoreError> {
    let Some(row) = row else {
        return Err(StoreError::Backend("the receipt was not placed".into()));
    };
    placed(
        r,
        row.try_get("seq").map_err(db)?,
        row.try_get("prev_hash").map_err(db)?,
        row.try_get("hash").map_err(db)?,
    )
}

/// The receipt at the place the database gave it. The database hashed the
/// text brain-core defines, with the function `brain serve` checked against
/// brain-core before serving (`PgScope::receipt_hash_agrees`); a drift all
/// the same fails the call, and `brain receipts verify` names the receipt,
/// which (placed with the commit) is written.
pub(crate) fn placed(
    r: Receipt,
    seq: i64,
    prev_hash: String,
    hash: String,
) -> Result<Receipt, StoreError> {
    let Some(r) = r.placed(seq, prev_hash, hash) else {
        tracing::error!(seq, "the database's receipt hash differs from brain-core's");
        return Err(StoreError::Backend(
            "the database's receipt hash differs from brain-core's".into(),
        ));
    };
    // Counted when appended; the caller commits it in the same transaction.
    metrics::counter!("brain_receipts_written_total").increment(1);
    Ok(r)
}

//! Tenant and project bootstrap, and receipts appended under the ledger-tip lock.

use brain_core::error::StoreError;
use brain_core::flow::FocusWrite;
use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::model::{Caller, now_micros};
use brain_core::receipt::{GENESIS_HASH, Receipt, ReceiptDraft};
use sqlx::{PgConnection, Row};

use crate::db;

/// The `slot` column value of the base focus.
pub(crate) const BASE: &str = "";

pub(crate) fn slot_key(slot: Option<&SlotName>) -> &str {
    slot.map_or(BASE, SlotName::as_str)
}

/// Create the tenant and its ledger tip on first use. Tenants come from signed
/// credentials, so a verified tenant claim is enough to provision one.
pub(crate) async fn ensure_tenant(
    tx: &mut PgConnection,
    tenant: &TenantId,
) -> Result<(), StoreError> {
    sqlx::query(
        "WITH t AS (INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING) \
         INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(GENESIS_HASH)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Create the tenant (with its ledger tip) and the project (with its empty
/// base focus at revision 0) on first use, in one statement.
pub(crate) async fn ensure_project(
    tx: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<(), StoreError> {
    sqlx::query(&format!("{ENSURE_PROJECT} SELECT 1"))
        .bind(tenant.as_str())
        .bind(GENESIS_HASH)
        .bind(project.as_str())
        .bind(now_micros())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    Ok(())
}

/// The CTEs that create tenant $1 (ledger tip hash $2) and project $3
/// (created at $4) when missing; a statement that needs them goes on after.
/// Foreign keys are checked at the end of the statement, so the rows the
/// CTEs insert satisfy them.
pub(crate) const ENSURE_PROJECT: &str = "WITH ensure_t AS (INSERT INTO tenants (tenant_id) VALUES ($1) ON CONFLICT DO NOTHING), \
     ensure_h AS (INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT DO NOTHING), \
     ensure_p AS (INSERT INTO projects (tenant_id, project, created_at) VALUES ($1, $3, $4) \
                  ON CONFLICT DO NOTHING RETURNING 1), \
     ensure_b AS (INSERT INTO focus_bodies (tenant_id, project, slot) SELECT $1, $3, '' FROM ensure_p)";

/// Create a slot empty at revision 0 on first bind.
pub(crate) async fn ensure_slot(
    tx: &mut PgConnection,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: &SlotName,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO focus_bodies (tenant_id, project, slot) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(slot.as_str())
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Append a receipt after the tenant's tip, and with `history` the focus
/// history row that names it, in the same statement as the receipt and the new tip.
pub(crate) async fn append_with(
    tx: &mut PgConnection,
    caller: &Caller,
    draft: ReceiptDraft,
    history: Option<FocusWrite<'_>>,
) -> Result<Receipt, StoreError> {
    let head = sqlx::query("SELECT seq, hash FROM receipt_heads WHERE tenant_id = $1 FOR UPDATE")
        .bind(caller.tenant.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
    let (seq, hash): (i64, String) = match head {
        Some(row) => (
            row.try_get("seq").map_err(db)?,
            row.try_get("hash").map_err(db)?,
        ),
        None => return Err(StoreError::Backend("tenant has no ledger tip".into())),
    };
    let r = Receipt::chain(caller, draft, seq, &hash, now_micros());
    // The receipt and the new tip in one statement: the tip's row lock (taken
    // above) is held for one round trip less before the commit, and every
    // writer of the tenant queues on that lock.
    const RECEIPT: &str = "WITH r AS (INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id, \
         credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest, \
         prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16))";
    const TIP: &str = " UPDATE receipt_heads SET seq = $2, hash = $16 WHERE tenant_id = $1";
    const HISTORY: &str = ", h AS (INSERT INTO focus_history (tenant_id, project, slot, revision, body, \
         session_id, receipt_seq, created_at) VALUES ($1, $17, $18, $19, $20, $21, $2, $22))";
    let sql = match history {
        None => format!("{RECEIPT}{TIP}"),
        Some(_) => format!("{RECEIPT}{HISTORY}{TIP}"),
    };
    let q = sqlx::query(&sql)
        .bind(r.tenant.as_str())
        .bind(r.seq)
        .bind(r.receipt_id.as_uuid())
        .bind(r.at)
        .bind(&r.tool)
        .bind(&r.project)
        .bind(r.session_id.map(|s| s.as_uuid()))
        .bind(r.credential_kind.as_str())
        .bind(&r.subject)
        .bind(&r.token_id)
        .bind(&r.connection_id)
        .bind(r.elevated)
        .bind(&r.outcome)
        .bind(&r.request_digest)
        .bind(&r.prev_hash)
        .bind(&r.hash);
    let q = match history {
        None => q,
        Some(w) => q
            .bind(w.session.project.as_str())
            .bind(slot_key(w.session.bound_slot.as_ref()))
            .bind(w.revision)
            .bind(w.body)
            .bind(w.session.session_id.as_uuid())
            .bind(w.at),
    };
    q.execute(&mut *tx).await.map_err(db)?;
    // Counted when appended; the caller commits it in the same transaction.
    metrics::counter!("brain_receipts_written_total").increment(1);
    Ok(r)
}

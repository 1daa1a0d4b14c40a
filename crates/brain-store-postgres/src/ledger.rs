//! Tenant and project bootstrap, and receipts appended under the ledger-tip lock.

use brain_core::error::StoreError;
use brain_core::flow::FocusWrite;
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::{Caller, now_micros};
use brain_core::receipt::{GENESIS_HASH, Receipt, ReceiptDraft};
use sqlx::{PgConnection, Row};

use crate::db;

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

/// Append a receipt after the tenant's tip, and with `history` the focus
/// history row that names it, in one statement: it locks the tip, hashes the
/// receipt's canonical text with it (`Receipt::frame`), and writes the receipt,
/// the history row and the new tip. Every writer of the tenant queues on that
/// lock until its commit, so the lock is taken in the write's last statement
/// and held for that statement and the commit only.
pub(crate) async fn append_with(
    tx: &mut PgConnection,
    caller: &Caller,
    draft: ReceiptDraft,
    history: Option<FocusWrite<'_>>,
) -> Result<Receipt, StoreError> {
    let r = Receipt::unplaced(caller, draft, now_micros());
    let frame = r.frame();
    const PLACE: &str = "WITH tip AS (SELECT seq, hash FROM receipt_heads WHERE tenant_id = $1 FOR UPDATE), \
         placed AS (SELECT seq + 1 AS seq, hash AS prev_hash, \
             encode(sha256(convert_to($14 || hash || $15 || (seq + 1)::text || $16, 'UTF8')), 'hex') AS hash \
             FROM tip), \
         r AS (INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id, \
             credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest, \
             prev_hash, hash) \
             SELECT $1, seq, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, prev_hash, hash FROM placed), \
         u AS (UPDATE receipt_heads SET seq = placed.seq, hash = placed.hash FROM placed \
             WHERE receipt_heads.tenant_id = $1)";
    const HISTORY: &str = ", h AS (INSERT INTO focus_history (tenant_id, project, slot, revision, body, \
         session_id, receipt_seq, created_at) SELECT $1, $17, $18, $19, $20, $21, seq, $22 FROM placed)";
    const RETURN: &str = " SELECT seq, prev_hash, hash FROM placed";
    let sql = match history {
        None => format!("{PLACE}{RETURN}"),
        Some(_) => format!("{PLACE}{HISTORY}{RETURN}"),
    };
    let q = sqlx::query(&sql)
        .bind(r.tenant.as_str())
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
        .bind(&frame.before_prev)
        .bind(&frame.before_seq)
        .bind(&frame.after_seq);
    let q = match history {
        None => q,
        Some(w) => q
            .bind(w.session.project.as_str())
            .bind(brain_core::sql::sessions::slot_key(
                w.session.bound_slot.as_ref(),
            ))
            .bind(w.revision)
            .bind(w.body)
            .bind(w.session.session_id.as_uuid())
            .bind(w.at),
    };
    let Some(row) = q.fetch_optional(&mut *tx).await.map_err(db)? else {
        return Err(StoreError::Backend("tenant has no ledger tip".into()));
    };
    let (seq, prev_hash, hash): (i64, String, String) = (
        row.try_get("seq").map_err(db)?,
        row.try_get("prev_hash").map_err(db)?,
        row.try_get("hash").map_err(db)?,
    );
    placed(r, seq, prev_hash, hash)
}

/// The receipt at the place the database gave it. The database hashed the
/// text brain-core defines; a drift between the two fails the write (and
/// rolls it back) instead of the chain.
pub(crate) fn placed(
    r: Receipt,
    seq: i64,
    prev_hash: String,
    hash: String,
) -> Result<Receipt, StoreError> {
    let Some(r) = r.placed(seq, prev_hash, hash) else {
        return Err(StoreError::Backend(
            "the database's receipt hash differs from brain-core's".into(),
        ));
    };
    // Counted when appended; the caller commits it in the same transaction.
    metrics::counter!("brain_receipts_written_total").increment(1);
    Ok(r)
}

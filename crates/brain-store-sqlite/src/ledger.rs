//! Tenant and project bootstrap, and receipts appended at the ledger tip.
//! Every writer holds the database write lock (`BEGIN IMMEDIATE`), so reading
//! the tip and advancing it cannot interleave with another writer.

use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SlotName, TenantId};
use brain_core::model::{Caller, now_micros};
use brain_core::receipt::{GENESIS_HASH, Receipt, ReceiptDraft};
use sqlx::{Row, SqliteConnection};

use crate::db;
use crate::rows::micros;

/// The `slot` column value of the base focus.
pub(crate) const BASE: &str = "";

pub(crate) fn slot_key(slot: Option<&SlotName>) -> &str {
    slot.map_or(BASE, SlotName::as_str)
}

/// Create the tenant and its ledger tip on first use.
pub(crate) async fn ensure_tenant(
    tx: &mut SqliteConnection,
    tenant: &TenantId,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO tenants (tenant_id, created_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(micros(now_micros()))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    sqlx::query(
        "INSERT INTO receipt_heads (tenant_id, seq, hash) VALUES (?1, 0, ?2) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(GENESIS_HASH)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// Create the project (with its empty base focus at revision 0) on first use.
pub(crate) async fn ensure_project(
    tx: &mut SqliteConnection,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<(), StoreError> {
    let created = sqlx::query(
        "INSERT INTO projects (tenant_id, project, created_at) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(project.as_str())
    .bind(micros(now_micros()))
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    if created.rows_affected() > 0 {
        sqlx::query("INSERT INTO focus_bodies (tenant_id, project, slot) VALUES (?1, ?2, '')")
            .bind(tenant.as_str())
            .bind(project.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}

/// Append a receipt after the tenant's tip.
pub(crate) async fn append(
    tx: &mut SqliteConnection,
    caller: &Caller,
    draft: ReceiptDraft,
) -> Result<Receipt, StoreError> {
    let head = sqlx::query("SELECT seq, hash FROM receipt_heads WHERE tenant_id = ?1")
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
    sqlx::query(
        "INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id, \
         credential_kind, subject, token_id, connection_id, elevated, outcome, request_digest, \
         prev_hash, hash) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
    )
    .bind(r.tenant.as_str())
    .bind(r.seq)
    .bind(r.receipt_id.as_uuid())
    .bind(micros(r.at))
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
    .bind(&r.hash)
    .execute(&mut *tx)
    .await
    .map_err(db)?;
    sqlx::query("UPDATE receipt_heads SET seq = ?2, hash = ?3 WHERE tenant_id = ?1")
        .bind(r.tenant.as_str())
        .bind(r.seq)
        .bind(&r.hash)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
    // Counted when appended; the caller commits it in the same transaction.
    metrics::counter!("brain_receipts_written_total").increment(1);
    Ok(r)
}

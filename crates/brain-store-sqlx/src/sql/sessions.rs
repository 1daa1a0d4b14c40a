//! The session, focus and document statements of a write transaction, as
//! [`super::SqlTx`]'s default methods run them.

use chrono::{DateTime, Utc};

use super::{Conn, Row, corrupt, rows};
use brain_core::error::StoreError;
use brain_core::ids::{ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Focus, Revision, Session};
use brain_core::rules::CloseRecord;

/// The base focus's row key: slots are named, the base is the empty name.
pub fn slot_key(slot: Option<&SlotName>) -> &str {
    slot.map_or("", SlotName::as_str)
}

/// The session; `lock` holds it for the rest of the transaction.
pub async fn load_session<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    id: SessionId,
    lock: bool,
) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
    let sql = if lock {
        c.sql().session_lock
    } else {
        c.sql().session_get
    };
    let row = c.fetch_optional(sql, &[tenant.into(), id.into()]).await?;
    row.as_deref().map(rows::session).transpose()
}

/// The body of the base focus or a slot at `revision`, from its history
/// (a replayed end's diff is computed again from it: it is not stored).
pub async fn focus_body_at<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
    revision: Revision,
) -> Result<Option<String>, StoreError> {
    let params = [
        tenant.into(),
        project.into(),
        slot_key(slot).into(),
        (revision + 1).into(),
        1i64.into(),
    ];
    let rows = c.fetch_all(c.sql().focus_history, &params).await?;
    match rows.first() {
        Some(r) if r.int("revision")? == revision => Ok(Some(r.text("body")?)),
        _ => Ok(None),
    }
}

/// The base focus (`slot = None`) or a slot body; missing reads as empty at
/// revision 0. `lock` holds it for the rest of the transaction.
pub async fn load_focus<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: Option<&SlotName>,
    lock: bool,
) -> Result<Focus, StoreError> {
    let sql = if lock {
        c.sql().focus_lock
    } else {
        c.sql().focus_get
    };
    let params = [tenant.into(), project.into(), slot_key(slot).into()];
    match c.fetch_optional(sql, &params).await? {
        Some(row) => rows::focus(row.as_ref()),
        None => Ok(Focus::empty()),
    }
}

pub async fn insert_session<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    s: &Session,
) -> Result<(), StoreError> {
    let params = [
        tenant.into(),
        s.session_id.into(),
        (&s.project).into(),
        s.client_key.as_str().into(),
        s.kind.as_str().into(),
        s.bound_slot.as_ref().map(SlotName::as_str).into(),
        s.started_focus_revision.into(),
        s.status.as_str().into(),
        s.opened_at.into(),
        s.last_activity_at.into(),
        s.opened_by.kind.as_str().into(),
        (&s.opened_by.subject).into(),
        s.opened_by.role.as_str().into(),
        (&s.opened_by.credential_id).into(),
        s.read_revision.into(),
        s.relayed_from.into(),
    ];
    c.execute(c.sql().session_insert, &params).await?;
    Ok(())
}

/// How many artifacts the session recorded.
pub async fn ledger_size<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    id: SessionId,
) -> Result<i64, StoreError> {
    let row = c
        .fetch_one(c.sql().ledger_size, &[tenant.into(), id.into()])
        .await?;
    row.int("n")
}

/// The project's open agent sessions, counted up to `up_to`.
pub async fn open_agent_sessions<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    up_to: i64,
) -> Result<i64, StoreError> {
    let params = [tenant.into(), project.into(), up_to.into()];
    c.fetch_one(c.sql().open_agent_sessions, &params)
        .await?
        .int("n")
}

/// The project's todos not yet acknowledged.
pub async fn inbox_count<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    let params = [tenant.into(), project.into()];
    c.fetch_one(c.sql().inbox_count, &params).await?.int("n")
}

pub async fn set_binding<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    id: SessionId,
    slot: &SlotName,
    read_revision: Revision,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let params = [
        tenant.into(),
        id.into(),
        slot.into(),
        now.into(),
        read_revision.into(),
    ];
    c.execute(c.sql().session_bind, &params).await?;
    Ok(())
}

pub async fn touch_session<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    id: SessionId,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let params = [tenant.into(), id.into(), now.into()];
    c.execute(c.sql().session_touch, &params).await?;
    Ok(())
}

pub async fn ensure_slot<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    slot: &SlotName,
) -> Result<(), StoreError> {
    let params = [tenant.into(), project.into(), slot.into()];
    c.execute(c.sql().slot_ensure, &params).await?;
    Ok(())
}

pub fn document(row: &dyn Row) -> Result<Document, StoreError> {
    Ok(Document {
        kind: DocumentKind::parse(&row.text("kind")?).ok_or_else(|| corrupt("document kind"))?,
        name: row.text("name")?,
        body: row.text("body")?,
        revision: row.int("revision")?,
        updated_at: row.opt_time("updated_at")?,
        updated_by: row.opt_text("updated_by")?,
    })
}

/// A project document; one never written reads as empty at revision 0.
/// `lock` holds it for the rest of the transaction.
pub async fn load_document<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    kind: DocumentKind,
    name: &str,
    lock: bool,
) -> Result<Document, StoreError> {
    let sql = if lock {
        c.sql().document_lock
    } else {
        c.sql().document_get
    };
    let params = [
        tenant.into(),
        project.into(),
        kind.as_str().into(),
        name.into(),
    ];
    match c.fetch_optional(sql, &params).await? {
        Some(r) => document(r.as_ref()),
        None => Ok(Document::empty(kind, name)),
    }
}

/// The project's mental models, counted once the project is claimed
/// (`Sql::project_claim`) by this transaction: a concurrent writer of a new
/// model waits here, and its model is counted (PostgreSQL reads each
/// statement in a snapshot of its own, taken after the claim).
pub async fn claim_mental_models<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<i64, StoreError> {
    let params = [tenant.into(), project.into()];
    c.fetch_all(c.sql().project_claim, &params).await?;
    c.fetch_one(c.sql().mental_model_count, &params)
        .await?
        .int("n")
}

/// Whether the document was written: not when another writer created or
/// moved it since it was read.
pub async fn write_document<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    doc: &Document,
) -> Result<bool, StoreError> {
    let params = [
        tenant.into(),
        project.into(),
        doc.kind.as_str().into(),
        (&doc.name).into(),
        (&doc.body).into(),
        doc.revision.into(),
        doc.updated_at.into(),
        (&doc.updated_by).into(),
    ];
    Ok(c.execute(c.sql().document_write, &params).await? == 1)
}

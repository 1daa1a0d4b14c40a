//! The portable form of each write a [`super::SqlTx`] makes: one plain statement at
//! a time, as its default methods run them. A store whose dialect
//! fuses them (PostgreSQL's CTEs, one round trip each) overrides the method;
//! SQLite, in process, runs these.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::sessions::{
    ensure_slot, inbox_count, insert_session, ledger_size, load_document, load_focus, load_session,
    open_agent_sessions, slot_key,
};
use super::{Conn, Param, PortableWrites, Row, corrupt, sessions};
use brain_core::error::StoreError;
use brain_core::flow::{FocusWrite, StoredNextFocus};
use brain_core::ids::{ArtifactId, ProjectKey, SessionId, TenantId};
use brain_core::memory::{Brief, DocumentKind};
use brain_core::model::{
    Artifact, ArtifactKind, Caller, Focus, FocusOutcome, Session, SessionStatus, now_micros,
};
use brain_core::receipt::{GENESIS_HASH, Receipt, ReceiptDraft};
use brain_core::store::{
    BriefingSources, COUNTED_UP_TO, FocusRef, LockedClose, NamedBody, RecentSession, Unattributed,
};

/// Create the tenant and its ledger tip on first use.
pub async fn ensure_tenant<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
) -> Result<(), StoreError> {
    let params = [tenant.into(), GENESIS_HASH.into(), now_micros().into()];
    for sql in c.sql().tenant_ensure {
        c.execute(sql, &params).await?;
    }
    Ok(())
}

/// Create the tenant, and the project with its empty base focus, on first use.
/// Remove `project` with its focus and slot revisions, sessions, artifacts,
/// documents and daily briefs (children first); whether it existed.
pub async fn delete_project<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<bool, StoreError> {
    let mut removed = 0;
    for sql in c.sql().project_delete {
        removed = c.execute(sql, &[tenant.into(), project.into()]).await?;
    }
    // The last statement removes the project's own row.
    Ok(removed > 0)
}

/// Remove everything of `tenant`, its receipts and ledger tip included.
pub async fn delete_tenant<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
) -> Result<bool, StoreError> {
    let mut removed = 0;
    for sql in c.sql().tenant_delete {
        removed = c.execute(sql, &[tenant.into()]).await?;
    }
    Ok(removed > 0)
}

pub async fn ensure_project<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
) -> Result<(), StoreError> {
    ensure_tenant(c, tenant).await?;
    let params = [tenant.into(), project.into(), now_micros().into()];
    c.execute(portable(c)?.project_insert, &params).await?;
    c.execute(
        c.sql().slot_ensure,
        &[tenant.into(), project.into(), "".into()],
    )
    .await?;
    Ok(())
}

/// Open `session` at the base focus revision as it stands, creating its
/// project and bound slot on first use; the bound slot's body.
pub async fn open_session<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    session: &mut Session,
) -> Result<Option<Focus>, StoreError> {
    let project = session.project.clone();
    ensure_project(c, tenant, &project).await?;
    session.started_focus_revision = load_focus(c, tenant, &project, None, false).await?.revision;
    let slot = match session.bound_slot.clone() {
        Some(name) => {
            ensure_slot(c, tenant, &project, &name).await?;
            Some(load_focus(c, tenant, &project, Some(&name), false).await?)
        }
        None => None,
    };
    session.read_revision = Some(
        slot.as_ref()
            .map_or(session.started_focus_revision, |f| f.revision),
    );
    insert_session(c, tenant, session).await?;
    Ok(slot)
}

/// The session and its target body, both locked, in that order.
pub async fn lock_close<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    id: SessionId,
) -> Result<Option<LockedClose>, StoreError> {
    let Some((session, close_record)) = load_session(c, tenant, id, true).await? else {
        return Ok(None);
    };
    let slot = session.bound_slot.as_ref();
    let target = load_focus(c, tenant, &session.project, slot, true).await?;
    Ok(Some(LockedClose {
        session,
        close_record,
        target,
    }))
}

/// Artifacts of the project created during the session that belong to no
/// ledger (a measure, never a gate), and its open agent sessions.
pub async fn close_counts<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    s: &Session,
    until: DateTime<Utc>,
) -> Result<(Unattributed, i64), StoreError> {
    let params = [
        tenant.into(),
        (&s.project).into(),
        s.opened_at.into(),
        until.into(),
    ];
    let found = c.fetch_all(portable(c)?.unattributed, &params).await?;
    let count = match found.first() {
        Some(r) => r.int("n")?,
        None => 0,
    };
    let ids = found
        .iter()
        .map(|r| Ok(ArtifactId::from_uuid(r.uuid("artifact_id")?)))
        .collect::<Result<_, StoreError>>()?;
    // This session is among them, and the answer counts the others up to
    // COUNTED_UP_TO.
    let open = open_agent_sessions(c, tenant, &s.project, COUNTED_UP_TO + 1).await?;
    Ok((Unattributed { count, ids }, open))
}

/// Append a receipt after the tenant's tip (the write lock is held, so the
/// tip cannot move under it) and, with `history`, the focus history row that
/// names it.
pub async fn append_receipt<C: Conn + ?Sized>(
    c: &mut C,
    caller: &Caller,
    draft: ReceiptDraft,
    history: Option<FocusWrite<'_>>,
) -> Result<Receipt, StoreError> {
    let tip = c
        .fetch_optional(portable(c)?.ledger_tip_lock, &[(&caller.tenant).into()])
        .await?
        .ok_or_else(|| StoreError::Backend("tenant has no ledger tip".into()))?;
    let r = Receipt::chain(
        caller,
        draft,
        tip.int("seq")?,
        &tip.text("hash")?,
        now_micros(),
    );
    let params = [
        (&r.tenant).into(),
        r.seq.into(),
        r.receipt_id.into(),
        r.at.into(),
        (&r.tool).into(),
        (&r.project).into(),
        r.session_id.into(),
        r.credential_kind.as_str().into(),
        (&r.subject).into(),
        (&r.token_id).into(),
        (&r.connection_id).into(),
        r.elevated.into(),
        (&r.outcome).into(),
        (&r.request_digest).into(),
        (&r.prev_hash).into(),
        (&r.hash).into(),
    ];
    c.execute(portable(c)?.receipt_insert, &params).await?;
    let params = [(&r.tenant).into(), r.seq.into(), (&r.hash).into()];
    c.execute(portable(c)?.ledger_tip_set, &params).await?;
    if let Some(w) = history {
        let params = [
            (&r.tenant).into(),
            (&w.session.project).into(),
            slot_key(w.session.bound_slot.as_ref()).into(),
            w.revision.into(),
            w.body.into(),
            w.session.session_id.into(),
            r.seq.into(),
            w.at.into(),
        ];
        c.execute(portable(c)?.history_insert, &params).await?;
    }
    // Counted when appended; the caller commits it in the same transaction.
    metrics::counter!("brain_receipts_written_total").increment(1);
    Ok(r)
}

/// Persist the closed session with the digest and result of the call that
/// closed it and, when given, its target body's new revision.
pub async fn apply_close<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    s: &Session,
    focus: Option<FocusWrite<'_>>,
    stored: StoredNextFocus<'_>,
    digest: &str,
    result: &Value,
) -> Result<(), StoreError> {
    if let Some(w) = focus {
        let params = [
            tenant.into(),
            (&w.session.project).into(),
            slot_key(w.session.bound_slot.as_ref()).into(),
            w.revision.into(),
            w.at.into(),
            w.session.session_id.into(),
        ];
        c.execute(portable(c)?.focus_write, &params).await?;
    }
    let params: [Param; 13] = [
        tenant.into(),
        s.session_id.into(),
        s.status.as_str().into(),
        s.ended_at.into(),
        s.last_activity_at.into(),
        (&s.summary).into(),
        stored.text.into(),
        (&s.nothing_to_capture_reason).into(),
        s.focus_outcome.map(FocusOutcome::as_str).into(),
        (&s.abandon_reason).into(),
        digest.into(),
        result.into(),
        stored.revision.into(),
    ];
    c.execute(c.sql().session_close, &params).await?;
    Ok(())
}

pub async fn insert_artifact<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    a: &Artifact,
) -> Result<(), StoreError> {
    let params = [
        tenant.into(),
        a.artifact_id.into(),
        (&a.project).into(),
        a.session_id.into(),
        a.kind.as_str().into(),
        (&a.text).into(),
        a.tags.as_slice().into(),
        a.created_at.into(),
    ];
    c.execute(portable(c)?.artifact_insert, &params).await?;
    Ok(())
}

/// Of `ids`, those that are artifacts of the project: `(id, kind,
/// acknowledged)`. One statement each (at most 50 ids).
pub async fn artifact_states<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    ids: &[ArtifactId],
) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let params = [tenant.into(), project.into(), (*id).into()];
        if let Some(r) = c
            .fetch_optional(portable(c)?.artifact_state, &params)
            .await?
            && let Some(k) = ArtifactKind::parse(&r.text("kind")?)
        {
            out.push((*id, k, r.flag("acknowledged")?));
        }
    }
    Ok(out)
}

/// Mark these todos of the project acknowledged at `at`, with the note; one
/// statement each.
pub async fn acknowledge<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    project: &ProjectKey,
    ids: &[ArtifactId],
    note: Option<&str>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    for id in ids {
        let params = [
            tenant.into(),
            project.into(),
            (*id).into(),
            at.into(),
            note.into(),
        ];
        c.execute(portable(c)?.acknowledge, &params).await?;
    }
    Ok(())
}

/// Everything the briefing (SPEC §5) reads but its mission recall, one
/// source at a time.
pub async fn briefing_sources<C: Conn + ?Sized>(
    c: &mut C,
    tenant: &TenantId,
    session: &Session,
) -> Result<BriefingSources, StoreError> {
    let project = &session.project;
    let base = load_focus(c, tenant, project, None, false).await?;
    let params = [
        tenant.into(),
        project.into(),
        session.client_key.as_str().into(),
        session.session_id.into(),
    ];
    let previous_open = match c
        .fetch_optional(portable(c)?.previous_open, &params)
        .await?
    {
        None => None,
        Some(r) => {
            let id = SessionId::from_uuid(r.uuid("session_id")?);
            let size = ledger_size(c, tenant, id).await?;
            Some((id, r.time("opened_at")?, r.time("last_activity_at")?, size))
        }
    };
    let written = |d: brain_core::memory::Document| (d.revision > 0).then_some(d.body);
    let exec = DocumentKind::ExecutiveState;
    let exec = load_document(c, tenant, project, exec, "", false).await?;
    let sync = DocumentKind::SyncNote;
    let sync = load_document(c, tenant, project, sync, "", false).await?;
    let params = [tenant.into(), project.into()];
    let models = c.fetch_all(portable(c)?.mental_models, &params).await?;
    let mut mental_models = Vec::with_capacity(models.len());
    for r in &models {
        let d = sessions::document(r.as_ref())?;
        mental_models.push(NamedBody {
            name: d.name,
            body: d.body,
        });
    }
    let brief = match c.fetch_optional(portable(c)?.latest_brief, &params).await? {
        Some(r) => Some(Brief::at(
            r.text("body")?,
            r.time("generated_at")?,
            now_micros(),
        )),
        None => None,
    };
    let recent = c.fetch_all(portable(c)?.recent_closed, &params).await?;
    let recent_sessions = recent
        .iter()
        .map(|r| recent_session(r.as_ref()))
        .collect::<Result<_, _>>()?;
    Ok(BriefingSources {
        base: FocusRef {
            body: base.body,
            revision: base.revision,
        },
        previous_open,
        executive_state: written(exec),
        sync_note: written(sync),
        mental_models,
        brief,
        inbox_count: inbox_count(c, tenant, project).await?,
        open_sessions: open_agent_sessions(c, tenant, project, COUNTED_UP_TO).await?,
        recent_sessions,
    })
}

fn recent_session(r: &dyn Row) -> Result<RecentSession, StoreError> {
    Ok(RecentSession {
        session_id: SessionId::from_uuid(r.uuid("session_id")?),
        status: SessionStatus::parse(&r.text("status")?).ok_or_else(|| corrupt("status"))?,
        summary: r.opt_text("summary")?,
        ended_at: r.opt_time("ended_at")?,
    })
}

/// The statements of the writes only the portable forms run; a store with
/// forms of its own (PostgreSQL) has none, and never calls these.
fn portable<C: Conn + ?Sized>(c: &C) -> Result<&'static PortableWrites, StoreError> {
    c.sql()
        .portable
        .ok_or_else(|| StoreError::Backend("this store writes this in a form of its own".into()))
}

//! One open write transaction of a backend ([`CloseTx`]): the coarse
//! operations every call is built of, and the two that a backend may fuse into
//! one statement, as separate statements.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::StoreError;
use crate::ids::ElevationId;
use crate::ids::{ArtifactId, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{Document, DocumentKind, RecallHit};
use crate::model::{Artifact, ArtifactKind, Caller, Focus, Revision, Session};
use crate::operators::{ConnectionOwner, Elevation};
use crate::receipt::ReceiptDraft;
use crate::rules::CloseRecord;
use crate::store::{BriefingSources, LockedClose, RecallQuery, Unattributed};

/// A write of a session's target body: the new body as `revision`.
#[derive(Debug, Clone, Copy)]
pub struct FocusWrite<'a> {
    pub session: &'a Session,
    pub body: &'a str,
    pub revision: Revision,
    pub at: DateTime<Utc>,
}

/// One open write transaction of a backend. Dropping it rolls back.
///
/// Its operations are coarse on purpose: each is one statement where the
/// backend's dialect allows (a round trip each on PostgreSQL), so a call is a
/// few round trips and the tenant's ledger tip is held only for the last ones.
#[async_trait]
pub trait CloseTx: crate::sql::Conn + Send + Sized {
    /// Refuse `tenant` when it is not the one this transaction was opened for.
    /// Required, so a store cannot forget its wall: one with row-level
    /// security answers `Ok` and says why.
    fn keeps_to(&self, tenant: &TenantId) -> Result<(), StoreError>;

    /// The session, locked for the rest of the transaction.
    async fn lock_session(
        &mut self,
        tenant: &TenantId,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::load_session(self, tenant, id, true).await
    }
    /// For a closing call: the session and its target body, both locked.
    async fn lock_close(
        &mut self,
        tenant: &TenantId,
        id: SessionId,
    ) -> Result<Option<LockedClose>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::lock_close(self, tenant, id).await
    }
    /// What a close's answer counts, read after its locks are held (a
    /// statement that waited on them would count from before the wait): the
    /// project's artifacts of no session created from the session's opening
    /// to `until`, and its open agent sessions, this one included.
    async fn close_counts(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::close_counts(self, tenant, session, until).await
    }
    /// The body of the base focus or a slot at `revision`, from its history
    /// (a replayed end's diff is computed again from it: it is not stored).
    async fn focus_body_at(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        revision: Revision,
    ) -> Result<Option<String>, StoreError> {
        self.keeps_to(tenant)?;
        if revision <= 0 {
            return Ok(Some(String::new()));
        }
        let params = [
            tenant.into(),
            project.into(),
            crate::sql::sessions::slot_key(slot).into(),
            (revision + 1).into(),
            1i64.into(),
        ];
        let rows = self.fetch_all(self.sql().focus_history, &params).await?;
        match rows.first() {
            Some(r) if r.int("revision")? == revision => Ok(Some(r.text("body")?)),
            _ => Ok(None),
        }
    }
    /// The base focus (`slot` None) or a slot body, unlocked.
    async fn focus(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::load_focus(self, tenant, project, slot, false).await
    }
    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::ops::elevation_active(self, caller, session).await
    }
    /// Create the tenant and its ledger tip on first use.
    async fn ensure_tenant(&mut self, tenant: &TenantId) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::ensure_tenant(self, tenant).await
    }
    /// Create the tenant and the project (with its empty base focus) on first use.
    async fn ensure_project(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::ensure_project(self, tenant, project).await
    }
    /// Open `session`: create its tenant, project and bound slot on first use,
    /// set its `started_focus_revision` to the base focus revision, insert it;
    /// the bound slot's body when it has one.
    async fn open_session(
        &mut self,
        tenant: &TenantId,
        session: &mut Session,
    ) -> Result<Option<Focus>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::open_session(self, tenant, session).await
    }
    /// Append a receipt after the tenant's tip, taking the tip's lock; with
    /// `history`, also the focus history row that names this receipt.
    async fn append_receipt(
        &mut self,
        caller: &Caller,
        draft: ReceiptDraft,
        history: Option<FocusWrite<'_>>,
    ) -> Result<(), StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::writes::append_receipt(self, caller, draft, history)
            .await
            .map(|_| ())
    }
    /// Persist the closed session with the digest and result of the closing
    /// call and, when given, replace its target body (already locked).
    async fn apply_close(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        focus: Option<FocusWrite<'_>>,
        digest: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::apply_close(self, tenant, session, focus, digest, result).await
    }
    async fn insert_session(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::insert_session(self, tenant, session).await
    }
    async fn ensure_slot(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: &SlotName,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::ensure_slot(self, tenant, project, slot).await
    }
    /// Bind the session to `slot`, read at `read_revision`, and mark it
    /// active at `now`.
    async fn set_binding(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
        slot: &SlotName,
        read_revision: Revision,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::set_binding(self, tenant, session, slot, read_revision, now).await
    }
    /// Mark the session active at `now`.
    async fn touch_session(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::touch_session(self, tenant, session, now).await
    }
    async fn insert_artifact(
        &mut self,
        tenant: &TenantId,
        artifact: &Artifact,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::insert_artifact(self, tenant, artifact).await
    }
    /// Everything the briefing (SPEC §5) reads but its mission recall.
    async fn briefing_sources(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<BriefingSources, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::briefing_sources(self, tenant, session).await
    }
    async fn recall(
        &mut self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Vec<RecallHit>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::recall::recall(self, tenant, q).await
    }
    async fn inbox_count(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<i64, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::inbox_count(self, tenant, project).await
    }
    /// Of `ids`, those that are artifacts of the project: `(id, kind,
    /// acknowledged)`.
    async fn artifact_states(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::artifact_states(self, tenant, project, ids).await
    }
    /// Mark these todos of the project acknowledged at `at`, with the note.
    async fn acknowledge(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::acknowledge(self, tenant, project, ids, note, at).await
    }
    /// A project document, locked for the rest of the transaction; one never
    /// written reads as empty at revision 0.
    async fn lock_document(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
    ) -> Result<Document, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::load_document(self, tenant, project, kind, name, true).await
    }
    /// Claim the project against other writers of new mental models, and
    /// count its models.
    async fn claim_mental_models(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<i64, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::claim_mental_models(self, tenant, project).await
    }
    /// Remove the project and everything of it but its receipts; whether it
    /// existed.
    async fn delete_project(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<bool, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::writes::delete_project(self, tenant, project).await
    }
    /// Insert or replace a project document; whether it was written (not
    /// when another writer created or moved it since it was read: a document
    /// that did not exist had no row to lock).
    async fn write_document(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::write_document(self, tenant, project, doc).await
    }
    /// The tenant's MCP connection an elevation would name, if it exists.
    async fn connection_owner(
        &mut self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<ConnectionOwner>, StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::ops::connection_owner(self, tenant, connection_id).await
    }
    async fn insert_elevation(&mut self, caller: &Caller, e: &Elevation) -> Result<(), StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::ops::insert_elevation(self, caller, e).await
    }
    /// Revoke one of the caller's credential's elevations at `at` (one revoked
    /// before keeps its first time); `None` if it has no such elevation.
    async fn revoke_elevation(
        &mut self,
        caller: &Caller,
        id: ElevationId,
        at: DateTime<Utc>,
    ) -> Result<Option<Elevation>, StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::ops::revoke_elevation(self, caller, id, at).await
    }
    /// Claim the caller's tenant against other new connections' writes, and
    /// count its open connections last seen after `since`: `(the caller's
    /// credential with its role, the whole tenant)`.
    async fn claim_connection_counts(
        &mut self,
        caller: &Caller,
        since: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::connections::claim_connection_counts(self, caller, since).await
    }
    /// Record an MCP connection, open and last seen at `at`, with its tracer.
    async fn insert_connection(
        &mut self,
        caller: &Caller,
        connection_id: &str,
        init_params: Option<Value>,
        tracer: SessionId,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(&caller.tenant)?;
        crate::sql::connections::insert_connection(
            self,
            caller,
            connection_id,
            init_params.as_ref(),
            tracer,
            at,
        )
        .await
    }
    /// A start's writes and reads: open `session` ([`CloseTx::open_session`]),
    /// read its briefing's sources, append the start's receipt. A store may do
    /// all three in one round trip and commit them itself when nothing else was
    /// written in this transaction; [`CloseTx::commit`] then commits only what
    /// was read after.
    async fn open_briefed(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        draft: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError> {
        open_briefed(self, caller, session, draft).await
    }
    /// A remember's writes: its project when missing, the artifact, its
    /// receipt. A store may do them in one round trip and commit them itself
    /// when nothing else was written in this transaction.
    async fn remember_with_receipt(
        &mut self,
        caller: &Caller,
        artifact: &Artifact,
        draft: ReceiptDraft,
    ) -> Result<(), StoreError> {
        remember_with_receipt(self, caller, artifact, draft).await
    }
    async fn commit(self) -> Result<(), StoreError>;
    /// End a transaction whose answer wrote nothing but rests on what it read
    /// (a replay, a dry run): its writes, if any, are undone. A backend whose
    /// transactions may read writes not yet committed (SQLite's group commit)
    /// returns once those are durable, so no answer rests on a write that is
    /// then lost.
    async fn finish_read(self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// [`CloseTx::open_briefed`] as separate statements.
pub async fn open_briefed<T: CloseTx>(
    tx: &mut T,
    caller: &Caller,
    session: &mut Session,
    draft: ReceiptDraft,
) -> Result<(Option<Focus>, BriefingSources), StoreError> {
    let tenant = &caller.tenant;
    let focus = tx.open_session(tenant, session).await?;
    let sources = tx.briefing_sources(tenant, session).await?;
    tx.append_receipt(caller, draft, None).await?;
    Ok((focus, sources))
}

/// [`CloseTx::remember_with_receipt`] as separate statements.
pub async fn remember_with_receipt<T: CloseTx>(
    tx: &mut T,
    caller: &Caller,
    artifact: &Artifact,
    draft: ReceiptDraft,
) -> Result<(), StoreError> {
    let tenant = &caller.tenant;
    tx.ensure_project(tenant, &artifact.project).await?;
    tx.insert_artifact(tenant, artifact).await?;
    tx.append_receipt(caller, draft, None).await?;
    Ok(())
}

//! A SQL store's write transaction: [`WriteTx`] as statements. Each
//! operation's default runs the portable statements one at a time
//! ([`super::writes`], [`super::sessions`]); a store whose dialect fuses
//! some into fewer round trips (PostgreSQL) overrides those, and has no
//! texts for them ([`super::Sql::portable`]): one form of each write.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Conn, connections, ops, sessions, writes};
use brain_core::error::StoreError;
use brain_core::flow::{CloseWrite, DocumentLock, NewConnection, Receipting};
use brain_core::ids::{ArtifactId, ElevationId, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Artifact, ArtifactKind, Caller, Focus, Revision, Session};
use brain_core::operators::{ConnectionOwner, Elevation};
use brain_core::receipt::ReceiptDraft;
use brain_core::rules::CloseRecord;
use brain_core::store::{BriefingSources, LockedClose, Unattributed};

/// [`WriteTx`] over a [`Conn`], bound to its tenant: every statement names
/// it, and PostgreSQL's row-level security holds the transaction to it too.
#[async_trait]
pub trait SqlTx: Conn + Sized {
    fn tenant(&self) -> &TenantId;

    async fn lock_session(
        &mut self,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
        let tenant = self.tenant().clone();
        sessions::load_session(self, &tenant, id, true).await
    }
    async fn lock_close(&mut self, id: SessionId) -> Result<Option<LockedClose>, StoreError> {
        let tenant = self.tenant().clone();
        writes::lock_close(self, &tenant, id).await
    }
    async fn focus(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        let tenant = self.tenant().clone();
        sessions::load_focus(self, &tenant, project, slot, false).await
    }
    async fn focus_body_at(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        revision: Revision,
    ) -> Result<Option<String>, StoreError> {
        let tenant = self.tenant().clone();
        sessions::focus_body_at(self, &tenant, project, slot, revision).await
    }
    /// [`WriteTx::peek_close`]: `None` unless the store writes a close in
    /// one call.
    async fn peek_close(
        &mut self,
        _id: SessionId,
        _until: DateTime<Utc>,
    ) -> Result<Option<brain_core::flow::PeekedClose>, StoreError> {
        Ok(None)
    }
    /// [`WriteTx::close_in_one_call`].
    async fn close_in_one_call(
        &mut self,
        _caller: &Caller,
        _w: CloseWrite<'_>,
        _on: brain_core::flow::DecidedOn<'_>,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn close_counts(
        &mut self,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        let tenant = self.tenant().clone();
        writes::close_counts(self, &tenant, session, until).await
    }
    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError> {
        ops::elevation_active(self, caller, session).await
    }
    async fn briefing_sources(&mut self, session: &Session) -> Result<BriefingSources, StoreError> {
        let tenant = self.tenant().clone();
        writes::briefing_sources(self, &tenant, session).await
    }
    async fn lock_todos(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        let tenant = self.tenant().clone();
        writes::artifact_states(self, &tenant, project, ids).await
    }
    async fn lock_document(
        &mut self,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
        count_models: bool,
    ) -> Result<DocumentLock, StoreError> {
        let tenant = self.tenant().clone();
        let mental_models = match count_models {
            true => Some(sessions::claim_mental_models(self, &tenant, project).await?),
            false => None,
        };
        let current = sessions::load_document(self, &tenant, project, kind, name, true).await?;
        Ok(DocumentLock {
            current,
            mental_models,
        })
    }
    async fn connection_owner(
        &mut self,
        connection_id: &str,
    ) -> Result<Option<ConnectionOwner>, StoreError> {
        let tenant = self.tenant().clone();
        ops::connection_owner(self, &tenant, connection_id).await
    }
    async fn claim_connection_counts(
        &mut self,
        caller: &Caller,
        since: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError> {
        connections::claim_connection_counts(self, caller, since).await
    }

    async fn provision(&mut self, project: Option<&ProjectKey>) -> Result<(), StoreError> {
        let tenant = self.tenant().clone();
        match project {
            Some(p) => writes::ensure_project(self, &tenant, p).await,
            None => writes::ensure_tenant(self, &tenant).await,
        }
    }
    async fn open_session(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        receipt: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError> {
        let tenant = self.tenant().clone();
        let focus = writes::open_session(self, &tenant, session).await?;
        let sources = writes::briefing_sources(self, &tenant, session).await?;
        writes::append_receipt(self, caller, receipt, None).await?;
        Ok((focus, sources))
    }
    async fn touch_session(
        &mut self,
        id: SessionId,
        now: DateTime<Utc>,
        bind: Option<(&ProjectKey, &SlotName)>,
    ) -> Result<Option<Focus>, StoreError> {
        let tenant = self.tenant().clone();
        let Some((project, slot)) = bind else {
            sessions::touch_session(self, &tenant, id, now).await?;
            return Ok(None);
        };
        // Created first: a closer writing the slot meanwhile is waited for,
        // and its revision is the one read.
        sessions::ensure_slot(self, &tenant, project, slot).await?;
        let read = sessions::load_focus(self, &tenant, project, Some(slot), false).await?;
        sessions::set_binding(self, &tenant, id, slot, read.revision, now).await?;
        Ok(Some(read))
    }
    async fn remember(
        &mut self,
        caller: &Caller,
        artifact: &Artifact,
        receipt: ReceiptDraft,
    ) -> Result<(), StoreError> {
        let tenant = self.tenant().clone();
        writes::ensure_project(self, &tenant, &artifact.project).await?;
        writes::insert_artifact(self, &tenant, artifact).await?;
        writes::append_receipt(self, caller, receipt, None).await?;
        Ok(())
    }
    async fn acknowledge(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        let tenant = self.tenant().clone();
        writes::acknowledge(self, &tenant, project, ids, note, at).await?;
        sessions::inbox_count(self, &tenant, project).await
    }
    async fn write_document(
        &mut self,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError> {
        let tenant = self.tenant().clone();
        sessions::write_document(self, &tenant, project, doc).await
    }
    async fn apply_close(&mut self, caller: &Caller, w: CloseWrite<'_>) -> Result<(), StoreError> {
        let tenant = self.tenant().clone();
        if let Some(next) = w.next_session {
            sessions::insert_session(self, &tenant, next).await?;
        }
        writes::append_receipt(self, caller, w.receipt, w.focus).await?;
        writes::apply_close(
            self,
            &tenant,
            w.session,
            w.focus,
            w.next_focus,
            w.digest,
            w.result,
        )
        .await
    }
    async fn grant_elevation(&mut self, caller: &Caller, e: &Elevation) -> Result<(), StoreError> {
        ops::insert_elevation(self, caller, e).await
    }
    async fn revoke_elevation(
        &mut self,
        caller: &Caller,
        id: ElevationId,
        at: DateTime<Utc>,
    ) -> Result<Option<Elevation>, StoreError> {
        ops::revoke_elevation(self, caller, id, at).await
    }
    async fn open_connection(
        &mut self,
        caller: &Caller,
        c: NewConnection<'_>,
    ) -> Result<(), StoreError> {
        let tenant = self.tenant().clone();
        sessions::insert_session(self, &tenant, c.tracer).await?;
        let tracer = c.tracer.session_id;
        let init = c.init_params.as_ref();
        connections::insert_connection(self, caller, c.connection_id, init, tracer, c.at).await
    }
    async fn delete_project(&mut self, project: &ProjectKey) -> Result<bool, StoreError> {
        let tenant = self.tenant().clone();
        writes::delete_project(self, &tenant, project).await
    }

    /// Commit, appending `receipt` first (the portable form appends it with
    /// [`writes::append_receipt`]).
    async fn commit(self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError>;
    async fn finish_read(self) -> Result<(), StoreError> {
        Ok(())
    }
}

//! A [`SqlTx`] as brain-core's write port ([`WriteTx`]): each operation
//! forwards to its SQL form, and every caller an operation records is held
//! to the transaction's tenant.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqlTx;
use brain_core::error::StoreError;
use brain_core::flow::{
    CloseWrite, DecidedOn, DocumentLock, NewConnection, PeekedClose, Receipting, WriteTx,
};
use brain_core::ids::{ArtifactId, ElevationId, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Artifact, ArtifactKind, Caller, Focus, Revision, Session};
use brain_core::operators::{ConnectionOwner, Elevation};
use brain_core::receipt::ReceiptDraft;
use brain_core::rules::CloseRecord;
use brain_core::store::{BriefingSources, LockedClose, Unattributed};

/// A SQL transaction as brain_core's write port: each operation is its
/// [`SqlTx`] form.
pub struct SqlWrite<T>(pub T);

impl<T: SqlTx> SqlWrite<T> {
    /// The caller an operation records (a receipt, an elevation, a
    /// connection) is of the transaction's tenant: SQLite has no row-level
    /// security to stop a flow that mixed them up.
    fn own(&self, caller: &Caller) -> Result<(), StoreError> {
        if &caller.tenant == self.0.tenant() {
            Ok(())
        } else {
            Err(StoreError::Backend("a caller of another tenant".into()))
        }
    }
}

#[async_trait]
impl<T: SqlTx> WriteTx for SqlWrite<T> {
    fn tenant(&self) -> &TenantId {
        SqlTx::tenant(&self.0)
    }
    async fn lock_session(
        &mut self,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
        SqlTx::lock_session(&mut self.0, id).await
    }
    async fn lock_close(&mut self, id: SessionId) -> Result<Option<LockedClose>, StoreError> {
        SqlTx::lock_close(&mut self.0, id).await
    }
    async fn focus(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        SqlTx::focus(&mut self.0, project, slot).await
    }
    async fn focus_body_at(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        revision: Revision,
    ) -> Result<Option<String>, StoreError> {
        SqlTx::focus_body_at(&mut self.0, project, slot, revision).await
    }
    async fn peek_close(
        &mut self,
        id: SessionId,
        until: DateTime<Utc>,
    ) -> Result<Option<PeekedClose>, StoreError> {
        SqlTx::peek_close(&mut self.0, id, until).await
    }
    async fn close_in_one_call(
        &mut self,
        caller: &Caller,
        w: CloseWrite<'_>,
        on: DecidedOn<'_>,
    ) -> Result<bool, StoreError> {
        self.own(caller)?;
        SqlTx::close_in_one_call(&mut self.0, caller, w, on).await
    }
    async fn close_counts(
        &mut self,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        SqlTx::close_counts(&mut self.0, session, until).await
    }
    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError> {
        self.own(caller)?;
        SqlTx::elevation_active(&mut self.0, caller, session).await
    }
    async fn briefing_sources(&mut self, session: &Session) -> Result<BriefingSources, StoreError> {
        SqlTx::briefing_sources(&mut self.0, session).await
    }
    async fn lock_todos(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        SqlTx::lock_todos(&mut self.0, project, ids).await
    }
    async fn lock_document(
        &mut self,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
        count_models: bool,
    ) -> Result<DocumentLock, StoreError> {
        SqlTx::lock_document(&mut self.0, project, kind, name, count_models).await
    }
    async fn connection_owner(
        &mut self,
        connection_id: &str,
    ) -> Result<Option<ConnectionOwner>, StoreError> {
        SqlTx::connection_owner(&mut self.0, connection_id).await
    }
    async fn claim_connection_counts(
        &mut self,
        caller: &Caller,
        since: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError> {
        self.own(caller)?;
        SqlTx::claim_connection_counts(&mut self.0, caller, since).await
    }
    async fn provision(&mut self, project: Option<&ProjectKey>) -> Result<(), StoreError> {
        SqlTx::provision(&mut self.0, project).await
    }
    async fn open_session(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        receipt: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError> {
        self.own(caller)?;
        SqlTx::open_session(&mut self.0, caller, session, receipt).await
    }
    async fn touch_session(
        &mut self,
        id: SessionId,
        now: DateTime<Utc>,
        bind: Option<(&ProjectKey, &SlotName)>,
    ) -> Result<Option<Focus>, StoreError> {
        SqlTx::touch_session(&mut self.0, id, now, bind).await
    }
    async fn remember(
        &mut self,
        caller: &Caller,
        artifact: &Artifact,
        receipt: ReceiptDraft,
    ) -> Result<(), StoreError> {
        self.own(caller)?;
        SqlTx::remember(&mut self.0, caller, artifact, receipt).await
    }
    async fn acknowledge(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        SqlTx::acknowledge(&mut self.0, project, ids, note, at).await
    }
    async fn write_document(
        &mut self,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError> {
        SqlTx::write_document(&mut self.0, project, doc).await
    }
    async fn apply_close(&mut self, caller: &Caller, w: CloseWrite<'_>) -> Result<(), StoreError> {
        self.own(caller)?;
        SqlTx::apply_close(&mut self.0, caller, w).await
    }
    async fn grant_elevation(&mut self, caller: &Caller, e: &Elevation) -> Result<(), StoreError> {
        self.own(caller)?;
        SqlTx::grant_elevation(&mut self.0, caller, e).await
    }
    async fn revoke_elevation(
        &mut self,
        caller: &Caller,
        id: ElevationId,
        at: DateTime<Utc>,
    ) -> Result<Option<Elevation>, StoreError> {
        self.own(caller)?;
        SqlTx::revoke_elevation(&mut self.0, caller, id, at).await
    }
    async fn open_connection(
        &mut self,
        caller: &Caller,
        c: NewConnection<'_>,
    ) -> Result<(), StoreError> {
        self.own(caller)?;
        SqlTx::open_connection(&mut self.0, caller, c).await
    }
    async fn delete_project(&mut self, project: &ProjectKey) -> Result<bool, StoreError> {
        SqlTx::delete_project(&mut self.0, project).await
    }
    async fn commit(self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError> {
        if let Some((caller, _)) = &receipt {
            self.own(caller)?;
        }
        SqlTx::commit(self.0, receipt).await
    }
    async fn finish_read(self) -> Result<(), StoreError> {
        SqlTx::finish_read(self.0).await
    }
}

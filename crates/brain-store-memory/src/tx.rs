//! The write port over a tenant's [`Tables`]: a copy taken when the
//! transaction opens, put back by its commit.

use std::collections::HashMap;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use tokio::sync::OwnedMutexGuard;

use brain_core::error::StoreError;
use brain_core::flow::{CloseWrite, DocumentLock, NewConnection, Receipting, WriteTx};
use brain_core::ids::{ArtifactId, ElevationId, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{Document, DocumentKind};
use brain_core::model::{Artifact, ArtifactKind, Caller, Focus, Revision, Session, now_micros};
use brain_core::operators::{ConnectionOwner, Elevation};
use brain_core::receipt::{Receipt, ReceiptDraft};
use brain_core::rules::CloseRecord;
use brain_core::store::{BriefingSources, LockedClose};
use brain_core::store::{COUNTED_UP_TO, Unattributed};

use crate::tables::{Connection, HistoryRow, Tables, focus_key};

/// A write transaction: the store's lock, held to its end, and the
/// tenant's rows as this transaction has written them so far.
pub struct MemoryTx {
    all: OwnedMutexGuard<HashMap<TenantId, Tables>>,
    tenant: TenantId,
    rows: Tables,
    /// Whether this write appended its receipt: one each, as PostgreSQL
    /// places one receipt with its commit.
    receipted: bool,
}

impl MemoryTx {
    pub(crate) fn open(all: OwnedMutexGuard<HashMap<TenantId, Tables>>, tenant: TenantId) -> Self {
        let rows = all.get(&tenant).cloned().unwrap_or_default();
        Self {
            all,
            tenant,
            rows,
            receipted: false,
        }
    }

    /// Append a receipt after the tenant's tip, as a SQL store's ledger does:
    /// a tenant never provisioned has no tip to append to.
    fn append_receipt(&mut self, caller: &Caller, draft: ReceiptDraft) -> Result<i64, StoreError> {
        if !self.rows.provisioned {
            return Err(StoreError::Backend("tenant has no ledger tip".into()));
        }
        if self.receipted {
            return Err(StoreError::Backend("a second receipt in one write".into()));
        }
        if caller.tenant != self.tenant {
            return Err(StoreError::Backend("a caller of another tenant".into()));
        }
        self.receipted = true;
        let (seq, hash) = self.rows.tip();
        let receipt = Receipt::chain(caller, draft, seq, hash, now_micros());
        let seq = receipt.seq;
        self.rows.receipts.push(receipt);
        Ok(seq)
    }

    fn ensure_project(&mut self, project: &ProjectKey) {
        self.rows.provisioned = true;
        self.rows.projects.insert(project.clone());
        self.ensure_focus(project, None);
    }

    fn ensure_focus(&mut self, project: &ProjectKey, slot: Option<&SlotName>) {
        let key = focus_key(project, slot);
        self.rows.focus.entry(key).or_insert_with(Focus::empty);
    }

    fn session_mut(&mut self, id: SessionId) -> Result<&mut Session, StoreError> {
        match self.rows.sessions.get_mut(&id) {
            Some((s, _)) => Ok(s),
            None => Err(StoreError::Backend("no such session to write".into())),
        }
    }
}

#[async_trait]
impl WriteTx for MemoryTx {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    async fn lock_session(
        &mut self,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError> {
        Ok(self.rows.sessions.get(&id).cloned())
    }

    async fn lock_close(&mut self, id: SessionId) -> Result<Option<LockedClose>, StoreError> {
        let Some((session, close_record)) = self.rows.sessions.get(&id).cloned() else {
            return Ok(None);
        };
        let target = self
            .rows
            .focus_of(&session.project, session.bound_slot.as_ref());
        Ok(Some(LockedClose {
            session,
            close_record,
            target,
        }))
    }

    async fn focus(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError> {
        Ok(self.rows.focus_of(project, slot))
    }

    async fn focus_body_at(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        revision: Revision,
    ) -> Result<Option<String>, StoreError> {
        let key = (focus_key(project, slot), revision);
        Ok(self.rows.history.get(&key).map(|h| h.body.clone()))
    }

    async fn close_counts(
        &mut self,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError> {
        let project = &session.project;
        let loose = self.rows.unattributed(project, session.opened_at, until);
        // This session is among them; the answer counts the others.
        let open = self.rows.open_agent_sessions(project, COUNTED_UP_TO + 1);
        Ok((loose, open))
    }

    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError> {
        Ok(self.rows.elevation_active(caller, session, now_micros()))
    }

    async fn briefing_sources(&mut self, session: &Session) -> Result<BriefingSources, StoreError> {
        Ok(self.rows.briefing_sources(session))
    }

    async fn lock_todos(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError> {
        Ok(self.rows.artifact_states(project, ids))
    }

    async fn lock_document(
        &mut self,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
        count_models: bool,
    ) -> Result<DocumentLock, StoreError> {
        let models = self.rows.mental_models(project).count();
        Ok(DocumentLock {
            current: self.rows.document(project, kind, name),
            mental_models: count_models.then(|| i64::try_from(models).unwrap_or(i64::MAX)),
        })
    }

    async fn connection_owner(
        &mut self,
        connection_id: &str,
    ) -> Result<Option<ConnectionOwner>, StoreError> {
        Ok(self
            .rows
            .connections
            .get(connection_id)
            .map(|c| ConnectionOwner {
                credential_id: c.credential_id.clone(),
                role: c.role,
                closed: c.closed,
            }))
    }

    async fn claim_connection_counts(
        &mut self,
        caller: &Caller,
        since: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError> {
        Ok(self.rows.open_connections(caller, since))
    }

    async fn provision(&mut self, project: Option<&ProjectKey>) -> Result<(), StoreError> {
        self.rows.provisioned = true;
        if let Some(p) = project {
            self.ensure_project(p);
        }
        Ok(())
    }

    async fn open_session(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        receipt: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError> {
        let project = session.project.clone();
        self.ensure_project(&project);
        session.started_focus_revision = self.rows.focus_of(&project, None).revision;
        let slot = session.bound_slot.clone().map(|name| {
            self.ensure_focus(&project, Some(&name));
            self.rows.focus_of(&project, Some(&name))
        });
        session.read_revision = Some(
            slot.as_ref()
                .map_or(session.started_focus_revision, |f| f.revision),
        );
        let row = (session.clone(), None);
        self.rows.sessions.insert(session.session_id, row);
        let sources = self.rows.briefing_sources(session);
        self.append_receipt(caller, receipt)?;
        Ok((slot, sources))
    }

    async fn touch_session(
        &mut self,
        id: SessionId,
        now: DateTime<Utc>,
        bind: Option<(&ProjectKey, &SlotName)>,
    ) -> Result<Option<Focus>, StoreError> {
        let read = bind.map(|(project, slot)| {
            self.ensure_focus(project, Some(slot));
            (slot.clone(), self.rows.focus_of(project, Some(slot)))
        });
        let s = self.session_mut(id)?;
        s.last_activity_at = now;
        Ok(read.map(|(slot, focus)| {
            s.bound_slot = Some(slot);
            s.read_revision = Some(focus.revision);
            focus
        }))
    }

    async fn remember(
        &mut self,
        caller: &Caller,
        artifact: &Artifact,
        receipt: ReceiptDraft,
    ) -> Result<(), StoreError> {
        self.ensure_project(&artifact.project);
        self.rows.artifacts.push(artifact.clone());
        self.append_receipt(caller, receipt).map(|_| ())
    }

    async fn acknowledge(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError> {
        for a in &mut self.rows.artifacts {
            let todo = a.kind == ArtifactKind::Todo && a.acknowledged_at.is_none();
            if &a.project == project && todo && ids.contains(&a.artifact_id) {
                a.acknowledged_at = Some(at);
                a.ack_note = note.map(str::to_owned);
            }
        }
        Ok(self.rows.inbox_count(project))
    }

    async fn write_document(
        &mut self,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError> {
        let held = self.rows.document(project, doc.kind, &doc.name).revision;
        if held + 1 != doc.revision {
            return Ok(false);
        }
        let key = (project.clone(), doc.kind.as_str(), doc.name.clone());
        self.rows.documents.insert(key, doc.clone());
        Ok(true)
    }

    async fn apply_close(&mut self, caller: &Caller, w: CloseWrite<'_>) -> Result<(), StoreError> {
        if let Some(next) = w.next_session {
            self.rows
                .sessions
                .insert(next.session_id, (next.clone(), None));
        }
        let receipt_seq = self.append_receipt(caller, w.receipt)?;
        if let Some(f) = w.focus {
            let key = focus_key(&f.session.project, f.session.bound_slot.as_ref());
            let written = Focus {
                body: f.body.to_owned(),
                revision: f.revision,
                updated_at: Some(f.at),
                updated_by_session: Some(f.session.session_id),
            };
            let row = HistoryRow {
                body: f.body.to_owned(),
                session_id: f.session.session_id,
                receipt_seq,
                created_at: f.at,
            };
            self.rows.history.insert((key.clone(), f.revision), row);
            self.rows.focus.insert(key, written);
        }
        let record = CloseRecord {
            digest: w.digest.to_owned(),
            result: w.result.clone(),
        };
        let row = (w.session.clone(), Some(record));
        self.rows.sessions.insert(w.session.session_id, row);
        Ok(())
    }

    async fn grant_elevation(&mut self, caller: &Caller, e: &Elevation) -> Result<(), StoreError> {
        let held = (caller.credential_id.clone(), e.clone());
        self.rows.elevations.push(held);
        Ok(())
    }

    async fn revoke_elevation(
        &mut self,
        caller: &Caller,
        id: ElevationId,
        at: DateTime<Utc>,
    ) -> Result<Option<Elevation>, StoreError> {
        let held = self
            .rows
            .elevations
            .iter_mut()
            .find(|(by, e)| e.id == id && by == &caller.credential_id);
        Ok(held.map(|(_, e)| {
            e.revoked_at = e.revoked_at.or(Some(at));
            e.clone()
        }))
    }

    async fn open_connection(
        &mut self,
        caller: &Caller,
        c: NewConnection<'_>,
    ) -> Result<(), StoreError> {
        let tracer = c.tracer.clone();
        self.rows.sessions.insert(tracer.session_id, (tracer, None));
        let record = Connection {
            credential_kind: caller.kind,
            credential_id: caller.credential_id.clone(),
            role: caller.role,
            init_params: c.init_params,
            tracer: c.tracer.session_id,
            last_seen_at: c.at,
            closed: false,
            started: None,
        };
        self.rows
            .connections
            .insert(c.connection_id.to_owned(), record);
        Ok(())
    }

    async fn delete_project(&mut self, project: &ProjectKey) -> Result<bool, StoreError> {
        Ok(self.rows.delete_project(project))
    }

    async fn commit(mut self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError> {
        if let Some((caller, draft)) = receipt {
            self.append_receipt(caller, draft)?;
        }
        let Self {
            mut all,
            tenant,
            rows,
            ..
        } = self;
        all.insert(tenant, rows);
        Ok(())
    }

    async fn finish_read(self) -> Result<(), StoreError> {
        Ok(())
    }
}

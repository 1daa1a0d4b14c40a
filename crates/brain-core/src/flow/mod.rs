//! The session calls (start, resume with its briefing, bind, remember, end,
//! relay, abandon; documents and elevations in their own modules) as one algorithm each, over the operations a backend's transaction offers. A
//! backend supplies SQL (the [`CloseTx`] methods); the order of checks, what is
//! written and what is answered live here once.

mod connections;
mod documents;
mod elevations;

pub use connections::{connection_open, over_cap};
pub use documents::document_put;
pub use elevations::{elevation_grant, elevation_revoke};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{DomainError, StoreError};
use crate::ids::ElevationId;
use crate::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{
    Document, DocumentKind, RecallHit, any_word_query, parse_executive_state, top_missions,
};
use crate::model::idle_since;
use crate::model::{
    Artifact, ArtifactKind, Caller, Focus, FocusOutcome, Revision, Session, SessionStatus,
    now_micros,
};
use crate::operators::{ConnectionOwner, Elevation};
use crate::outcome::{AbandonResult, EndResult, RelayResult, as_replay, slot_after_relay};
use crate::receipt::ReceiptDraft;
use crate::requests::{AbandonRequest, BindRequest, EndRequest, OverrideGrant, RememberRequest};
use crate::requests::{ResumeRequest, StartRequest, TodoAckOutcome, TodoAckRequest};
use crate::rules::{self, CloseDecision, CloseKind, CloseRecord};
use crate::store::{
    BindOutcome, Briefing, BriefingSources, LockedClose, MissionRecall, RecallQuery, Recovery,
    SessionBriefing, SlotRef, SlotView, Unattributed,
};

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
    /// Bind the session to `slot` and mark it active at `now`.
    async fn set_binding(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
        slot: &SlotName,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.keeps_to(tenant)?;
        crate::sql::sessions::set_binding(self, tenant, session, slot, now).await
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

/// A receipt draft for a call on `tool`.
pub fn draft(
    tool: &str,
    project: Option<&ProjectKey>,
    session_id: Option<SessionId>,
    digest: &str,
    outcome: Result<(), &DomainError>,
) -> ReceiptDraft {
    ReceiptDraft {
        tool: tool.to_owned(),
        project: project.map(|p| p.as_str().to_owned()),
        session_id,
        elevated: false,
        outcome: match outcome {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.code.as_str().to_owned(),
        },
        request_digest: digest.to_owned(),
    }
}

/// A refusal: its receipt only, committed, then the error. On a dry run the
/// bare error, with nothing written.
pub async fn refuse<T: CloseTx, R>(
    mut tx: T,
    caller: &Caller,
    dry_run: bool,
    draft: ReceiptDraft,
    err: DomainError,
) -> Result<R, StoreError> {
    if dry_run {
        tx.finish_read().await?;
    } else {
        tx.ensure_tenant(&caller.tenant).await?;
        commit_with_receipt(tx, caller, draft).await?;
    }
    Err(err.into())
}

/// A write's last step, accepted or refused: its receipt after the tenant's
/// tip, then the commit.
pub async fn commit_with_receipt<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    draft: ReceiptDraft,
) -> Result<(), StoreError> {
    tx.append_receipt(caller, draft, None).await?;
    tx.commit().await
}

/// End (`relay_to` None) or relay: steps 1–8 of SPEC §2.4, in one transaction.
pub async fn close<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: &EndRequest,
    relay_to: Option<&str>,
) -> Result<Value, StoreError> {
    let kind = if relay_to.is_some() {
        CloseKind::Relay
    } else {
        CloseKind::End
    };
    let tool = match kind {
        CloseKind::End => "brain_session_end",
        CloseKind::Relay => "brain_session_relay",
    };
    let tenant = &caller.tenant;
    let loaded = tx.lock_close(tenant, req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.session.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        draft(
            tool,
            project.as_ref(),
            Some(req.session_id),
            &req.digest,
            outcome,
        )
    };
    // Steps 1–2.
    let LockedClose {
        mut session,
        close_record,
        target: found,
    } = match loaded {
        Some(l) => match rules::check_session(Some(&l.session), &req.expected_client_key) {
            Ok(_) => l,
            Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
        },
        None => {
            let e = DomainError::session_not_found();
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
    };
    // Step 3.
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => {
            tx.finish_read().await?;
            return Ok(as_replay(stored, Some(&found)));
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    // Steps 4–7 against the current body, locked by lock_close so that
    // concurrent closers serialize there.
    let target = session.bound_slot.clone();
    let kept;
    let req = if req.keep_focus {
        kept = EndRequest {
            next_focus: found.body.clone(),
            expected_focus_revision: found.revision,
            ..req.clone()
        };
        &kept
    } else {
        req
    };
    // Looked up only when asked for, inside this transaction: an elevation
    // revoked or expired before this point never counts.
    let grant = OverrideGrant {
        elevation_active: req.allow_focus_shrink
            && rules::elevation_can_count(caller)
            && tx.elevation_active(caller, req.session_id).await?,
    };
    let authority = rules::may_override(caller, kind == CloseKind::Relay, grant);
    let decision = rules::decide_close(&session, req, kind, relay_to, authority, &found);
    let outcome = match (decision.outcome(), decision) {
        (Some(o), _) => o,
        (None, CloseDecision::Refuse(e)) => {
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
        (None, _) => return Err(StoreError::Backend("a close decided nothing".into())),
    };
    // Taken once the locks are held, so a closer that waited on another ends after it.
    let now = now_micros();
    rules::close_session(&mut session, req, kind, outcome, now);
    let (unattributed, open_agent_sessions) = tx.close_counts(tenant, &session, now).await?;
    // Counted before this session's row is closed, so discount it.
    let remaining = open_agent_sessions - 1;

    if req.dry_run {
        tx.finish_read().await?;
        // As the real call would count: a relay that applies opens one more.
        let would_open = kind == CloseKind::Relay
            && matches!(outcome, FocusOutcome::Applied | FocusOutcome::Unchanged);
        let end = EndResult::build(
            session,
            outcome,
            &found,
            &req.next_focus,
            true,
            unattributed,
            remaining + i64::from(would_open),
        );
        // A relay's dry run shows the slot as it would leave it, as end's
        // dry run shows focus_at_end.
        let slot = target
            .as_ref()
            .filter(|_| kind == CloseKind::Relay)
            .map(|s| slot_after_relay(s, outcome, &found, &req.next_focus));
        return finish(kind, end, None, slot);
    }

    // Step 8: apply, with the receipt, in this transaction. The tenant's
    // ledger tip is taken last: every writer of the tenant queues on it, so
    // everything that does not need the receipt's seq is written first.
    let (new_session, slot) = match (kind, outcome, &target, relay_to) {
        (
            CloseKind::Relay,
            FocusOutcome::Applied | FocusOutcome::Unchanged,
            Some(slot),
            Some(to),
        ) => {
            let to = ClientKey::parse("to_client_key", to)?;
            let base = tx.focus(tenant, &session.project, None).await?;
            let next = Session::open_agent(
                caller,
                session.project.clone(),
                to,
                Some(slot.clone()),
                base.revision,
            );
            tx.insert_session(tenant, &next).await?;
            (
                Some(next),
                Some(slot_after_relay(slot, outcome, &found, &req.next_focus)),
            )
        }
        (CloseKind::Relay, _, Some(slot), _) => (
            None,
            Some(slot_after_relay(slot, outcome, &found, &req.next_focus)),
        ),
        _ => (None, None),
    };
    // A relay's new session is one of those left open.
    let remaining = remaining + i64::from(new_session.is_some());
    let end = EndResult::build(
        session.clone(),
        outcome,
        &found,
        &req.next_focus,
        false,
        unattributed,
        remaining,
    );
    let result = finish(kind, end, new_session, slot)?;
    let written = (outcome == FocusOutcome::Applied).then_some(FocusWrite {
        session: &session,
        body: &req.next_focus,
        revision: found.revision + 1,
        at: now_micros(),
    });
    // The receipt before the close's own write: a store may leave it for the
    // commit to place, and send it with that write (PostgreSQL does).
    let mut d = draft(Ok(()));
    d.elevated = req.allow_focus_shrink && authority;
    d.outcome = rules::close_receipt_outcome(outcome).to_owned();
    tx.append_receipt(caller, d, written).await?;
    tx.apply_close(tenant, &session, written, &req.digest, &result)
        .await?;
    tx.commit().await?;
    Ok(result)
}

fn finish(
    kind: CloseKind,
    end: EndResult,
    new_session: Option<Session>,
    slot: Option<SlotView>,
) -> Result<Value, StoreError> {
    let value = match kind {
        CloseKind::End => serde_json::to_value(end),
        CloseKind::Relay => RelayResult {
            end,
            new_session,
            slot,
        }
        .to_value(),
    };
    value.map_err(StoreError::backend)
}

/// Abandon (SPEC §2.6): steps 1–3, a non-blank reason, consent; no focus write.
pub async fn abandon<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: &AbandonRequest,
) -> Result<Value, StoreError> {
    const TOOL: &str = "brain_session_abandon";
    let tenant = &caller.tenant;
    let loaded = tx.lock_session(tenant, req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.0.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        draft(
            TOOL,
            project.as_ref(),
            Some(req.session_id),
            &req.digest,
            outcome,
        )
    };
    let (mut session, close_record) =
        match rules::check_session(loaded.as_ref().map(|l| &l.0), &req.expected_client_key) {
            Ok(s) => (s.clone(), loaded.as_ref().and_then(|l| l.1.clone())),
            Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
        };
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => {
            tx.finish_read().await?;
            return Ok(as_replay(stored, None));
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    if let Err(e) = rules::check_abandon(&req.reason, req.confirm, req.dry_run) {
        return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
    }
    let now = now_micros();
    session.status = SessionStatus::Abandoned;
    session.ended_at = Some(now);
    session.last_activity_at = now;
    session.abandon_reason = Some(req.reason.clone());
    let result = AbandonResult {
        session: session.clone(),
        replayed: false,
        dry_run: req.dry_run,
        would: req.dry_run.then_some("abandoned"),
    };
    let value = serde_json::to_value(result).map_err(StoreError::backend)?;
    if req.dry_run {
        tx.finish_read().await?;
        return Ok(value);
    }
    tx.append_receipt(caller, draft(Ok(())), None).await?;
    tx.apply_close(tenant, &session, None, &req.digest, &value)
        .await?;
    tx.commit().await?;
    Ok(value)
}

/// Bind (SPEC §2.2): the session checks, then bind once; the same slot again is a no-op.
pub async fn bind<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: &BindRequest,
) -> Result<BindOutcome, StoreError> {
    const TOOL: &str = "brain_session_bind";
    let tenant = &caller.tenant;
    let loaded = tx.lock_session(tenant, req.session_id).await?;
    let checked = rules::check_session(loaded.as_ref().map(|l| &l.0), &req.expected_client_key)
        .and_then(|s| rules::require_open(s).map(|()| s))
        .and_then(|s| rules::check_bind(s, &req.slot).map(|same| (s.clone(), same)));
    let (mut session, already) = match checked {
        Ok(v) => v,
        Err(e) => {
            let project = loaded.as_ref().map(|l| &l.0.project);
            let d = draft(TOOL, project, Some(req.session_id), &req.digest, Err(&e));
            return refuse(tx, caller, false, d, e).await;
        }
    };
    let now = now_micros();
    if !already {
        tx.ensure_slot(tenant, &session.project, &req.slot).await?;
        session.bound_slot = Some(req.slot.clone());
    }
    session.last_activity_at = now;
    tx.set_binding(tenant, session.session_id, &req.slot, now)
        .await?;
    let focus = tx.focus(tenant, &session.project, Some(&req.slot)).await?;
    let d = draft(
        TOOL,
        Some(&session.project),
        Some(session.session_id),
        &req.digest,
        Ok(()),
    );
    commit_with_receipt(tx, caller, d).await?;
    Ok(BindOutcome {
        session,
        slot: slot_view(&req.slot, focus),
    })
}

/// Remember (SPEC §2.7): with a session, the artifact joins its ledger once the
/// session checks pass (and the session is kept locked until the insert).
pub async fn remember<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: RememberRequest,
) -> Result<Artifact, StoreError> {
    const TOOL: &str = "brain_remember";
    let tenant = &caller.tenant;
    let now = now_micros();
    let session_id = match &req.session {
        None => None,
        Some((id, key)) => {
            let loaded = tx.lock_session(tenant, *id).await?;
            let checked = rules::check_session(loaded.as_ref().map(|l| &l.0), key)
                .and_then(|s| rules::require_open(s).map(|()| s))
                .and_then(|s| {
                    if s.project == req.project {
                        Ok(s)
                    } else {
                        Err(DomainError::invalid_argument(
                            "project",
                            format!("must be the session's project ({})", s.project),
                        ))
                    }
                });
            if let Err(e) = checked {
                let d = draft(TOOL, Some(&req.project), Some(*id), &req.digest, Err(&e));
                return refuse(tx, caller, false, d, e).await;
            }
            tx.touch_session(tenant, *id, now).await?;
            Some(*id)
        }
    };
    let artifact = Artifact {
        artifact_id: ArtifactId::new_random(),
        project: req.project.clone(),
        session_id,
        kind: req.kind,
        text: req.text,
        tags: req.tags,
        created_at: now,
        acknowledged_at: None,
        ack_note: None,
    };
    let d = draft(TOOL, Some(&req.project), session_id, &req.digest, Ok(()));
    tx.remember_with_receipt(caller, &artifact, d).await?;
    tx.commit().await?;
    Ok(artifact)
}

fn slot_view(name: &SlotName, focus: Focus) -> SlotView {
    SlotView {
        name: name.clone(),
        body: focus.body,
        revision: focus.revision,
    }
}

/// The briefing (SPEC §5), recalculated from its sources inside this
/// transaction: one read of them all, then the recall for each of the first
/// three missions of the executive state.
pub async fn briefing<T: CloseTx>(
    tx: &mut T,
    tenant: &TenantId,
    idle_secs: i64,
    session: &Session,
    slot: Option<&SlotView>,
) -> Result<Briefing, StoreError> {
    let src = tx.briefing_sources(tenant, session).await?;
    briefing_from(tx, tenant, idle_secs, session, slot, src).await
}

/// The briefing from its sources, with the recall for each of the first three
/// missions of the executive state.
async fn briefing_from<T: CloseTx>(
    tx: &mut T,
    tenant: &TenantId,
    idle_secs: i64,
    session: &Session,
    slot: Option<&SlotView>,
    src: BriefingSources,
) -> Result<Briefing, StoreError> {
    let project = &session.project;
    let recovery = src
        .previous_open
        .map(|(id, opened_at, last, ledger_size)| Recovery {
            session_id: id,
            opened_at,
            last_activity_at: last,
            idle: idle_since(last, now_micros(), idle_secs),
            ledger_size,
        });
    let executive_state = src
        .executive_state
        .as_deref()
        .and_then(|body| parse_executive_state(body).ok());
    let mut recall = Vec::new();
    if let Some(state) = &executive_state {
        for mission in top_missions(state, 3) {
            let q = RecallQuery {
                project: project.clone(),
                tags: Vec::new(),
                query: Some(any_word_query(&mission)),
                inbox: false,
                session_id: None,
                before: None,
                kinds: Vec::new(),
                limit: 3,
                offset: 0,
            };
            let artifacts = tx.recall(tenant, &q).await?;
            recall.push(MissionRecall { mission, artifacts });
        }
    }
    Ok(Briefing {
        base_focus: src.base,
        slot: slot.map(SlotRef::from),
        executive_state,
        brief: src.brief,
        mental_models: src.mental_models,
        recall,
        inbox_count: src.inbox_count,
        sync_note: src.sync_note,
        open_sessions: src.open_sessions,
        recent_sessions: src.recent_sessions,
        recovery,
    })
}

/// Start (SPEC §2.1): open a session (binding it when asked) and brief it.
pub async fn start<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: StartRequest,
    idle_secs: i64,
) -> Result<SessionBriefing, StoreError> {
    let tenant = &caller.tenant;
    let mut session = Session::open_agent(
        caller,
        req.project.clone(),
        req.client_key,
        req.slot.clone(),
        0,
    );
    let d = draft(
        "brain_session_start",
        Some(&session.project),
        Some(session.session_id),
        &req.digest,
        Ok(()),
    );
    let (slot_focus, src) = tx.open_briefed(caller, &mut session, d).await?;
    let slot = match (&req.slot, slot_focus) {
        (Some(name), Some(focus)) => Some(slot_view(name, focus)),
        (Some(name), None) => Some(slot_view(name, Focus::empty())),
        (None, _) => None,
    };
    let briefing = briefing_from(&mut tx, tenant, idle_secs, &session, slot.as_ref(), src).await?;
    tx.commit().await?;
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}

/// Resume (SPEC §2.3): reattach to an open session; only its activity time changes.
pub async fn resume<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: &ResumeRequest,
    idle_secs: i64,
) -> Result<SessionBriefing, StoreError> {
    let tenant = &caller.tenant;
    let loaded = tx.lock_session(tenant, req.session_id).await?;
    let mut session = rules::check_session(loaded.as_ref().map(|l| &l.0), &req.expected_client_key)
        .and_then(|s| rules::require_open(s).map(|()| s.clone()))?;
    session.last_activity_at = now_micros();
    tx.touch_session(tenant, session.session_id, session.last_activity_at)
        .await?;
    let slot = match &session.bound_slot {
        Some(name) => Some(slot_view(
            name,
            tx.focus(tenant, &session.project, Some(name)).await?,
        )),
        None => None,
    };
    let briefing = briefing(&mut tx, tenant, idle_secs, &session, slot.as_ref()).await?;
    tx.commit().await?;
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}

/// `brain_todo_ack` (SPEC §2.7): acknowledge todos so they leave the inbox, in
/// one transaction with one receipt; repeating it changes nothing more.
pub async fn todo_ack<T: CloseTx>(
    mut tx: T,
    caller: &Caller,
    req: &TodoAckRequest,
) -> Result<TodoAckOutcome, StoreError> {
    let tenant = &caller.tenant;
    tx.ensure_tenant(tenant).await?;
    let states = tx
        .artifact_states(tenant, &req.project, &req.artifact_ids)
        .await?;
    let mut out = TodoAckOutcome::default();
    for id in &req.artifact_ids {
        match states.iter().find(|(found, _, _)| found == id) {
            Some((_, ArtifactKind::Todo, false)) => out.acknowledged.push(*id),
            Some((_, ArtifactKind::Todo, true)) => out.already_acknowledged.push(*id),
            _ => out.not_todos.push(*id),
        }
    }
    if !out.acknowledged.is_empty() {
        tx.acknowledge(
            tenant,
            &req.project,
            &out.acknowledged,
            req.note.as_deref(),
            now_micros(),
        )
        .await?;
    }
    let d = draft(
        "brain_todo_ack",
        Some(&req.project),
        None,
        &req.digest,
        Ok(()),
    );
    tx.append_receipt(caller, d, None).await?;
    out.inbox_count = tx.inbox_count(tenant, &req.project).await?;
    tx.commit().await?;
    Ok(out)
}

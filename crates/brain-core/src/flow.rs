//! The session calls (start, resume with its briefing, bind, remember, end,
//! relay, abandon) as one algorithm each, over the operations a backend's transaction offers. A
//! backend supplies SQL (the [`CloseTx`] methods); the order of checks, what is
//! written and what is answered live here once.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::{DomainError, StoreError};
use crate::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{
    Brief, Document, DocumentKind, RecallHit, any_word_query, parse_executive_state, top_missions,
};
use crate::model::idle_since;
use crate::model::{
    Artifact, ArtifactKind, Caller, Focus, FocusOutcome, Revision, Session, SessionStatus,
    now_micros,
};
use crate::outcome::{AbandonResult, EndResult, RelayResult, as_replay, slot_after_relay};
use crate::receipt::{Receipt, ReceiptDraft};
use crate::requests::{AbandonRequest, BindRequest, EndRequest, OverrideGrant, RememberRequest};
use crate::requests::{ResumeRequest, StartRequest, TodoAckOutcome, TodoAckRequest};
use crate::rules::{self, CloseDecision, CloseKind, CloseRecord};
use crate::store::{
    BindOutcome, Briefing, FocusRef, MissionRecall, NamedBody, RecallQuery, RecentSession,
    Recovery, SessionBriefing, SlotView, Unattributed,
};

/// One open write transaction of a backend. Dropping it rolls back.
#[async_trait]
pub trait CloseTx: Send + Sized {
    /// The session, locked for the rest of the transaction.
    async fn lock_session(
        &mut self,
        tenant: &TenantId,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError>;
    /// The base focus (`slot` None) or a slot body; locked when `lock`.
    async fn focus(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        lock: bool,
    ) -> Result<Focus, StoreError>;
    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError>;
    async fn ensure_tenant(&mut self, tenant: &TenantId) -> Result<(), StoreError>;
    async fn append_receipt(
        &mut self,
        caller: &Caller,
        draft: ReceiptDraft,
    ) -> Result<Receipt, StoreError>;
    /// Write `body` as `revision` of the session's target, with its history row.
    /// Replace the session's target body (the focus row is already locked).
    async fn write_focus(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        body: &str,
        revision: Revision,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// The revision's history row, which names the receipt that wrote it.
    async fn record_focus_history(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        body: &str,
        revision: Revision,
        receipt_seq: i64,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    async fn insert_session(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<(), StoreError>;
    async fn unattributed(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<Unattributed, StoreError>;
    async fn open_agent_sessions(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<i64, StoreError>;
    /// Persist the closed session with the digest and result of the closing call.
    async fn store_close(
        &mut self,
        tenant: &TenantId,
        session: &Session,
        digest: &str,
        result: &Value,
    ) -> Result<(), StoreError>;
    async fn ensure_project(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<(), StoreError>;
    async fn ensure_slot(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: &SlotName,
    ) -> Result<(), StoreError>;
    /// Bind the session to `slot` and mark it active at `now`.
    async fn set_binding(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
        slot: &SlotName,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Mark the session active at `now`.
    async fn touch_session(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    async fn insert_artifact(
        &mut self,
        tenant: &TenantId,
        artifact: &Artifact,
    ) -> Result<(), StoreError>;
    // Reads for the briefing (SPEC §5), inside the same transaction.
    /// The last `limit` closed agent sessions of the project, newest first.
    async fn recent_closed(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        limit: i64,
    ) -> Result<Vec<RecentSession>, StoreError>;
    /// This client's newest other open agent session in the project:
    /// `(id, opened_at, last_activity_at)`.
    async fn previous_open(
        &mut self,
        tenant: &TenantId,
        session: &Session,
    ) -> Result<Option<(SessionId, DateTime<Utc>, DateTime<Utc>)>, StoreError>;
    async fn ledger_size(
        &mut self,
        tenant: &TenantId,
        session: SessionId,
    ) -> Result<i64, StoreError>;
    async fn document(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        kind: DocumentKind,
    ) -> Result<Document, StoreError>;
    async fn mental_models(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<Vec<Document>, StoreError>;
    async fn recall(
        &mut self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Vec<RecallHit>, StoreError>;
    async fn brief(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<Option<Brief>, StoreError>;
    async fn inbox_count(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<i64, StoreError>;
    /// Of `ids`, those that are artifacts of the project: `(id, kind,
    /// acknowledged)`.
    async fn artifact_states(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError>;
    /// Mark these todos of the project acknowledged at `at`, with the note.
    async fn acknowledge(
        &mut self,
        tenant: &TenantId,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    async fn commit(self) -> Result<(), StoreError>;
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
    if !dry_run {
        tx.ensure_tenant(&caller.tenant).await?;
        tx.append_receipt(caller, draft).await?;
        tx.commit().await?;
    }
    Err(err.into())
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
    let loaded = tx.lock_session(tenant, req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.0.project.clone());
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
    let (mut session, close_record) = match loaded {
        Some((s, c)) => match rules::check_session(Some(&s), &req.expected_client_key) {
            Ok(_) => (s, c),
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
            let target = session.bound_slot.as_ref();
            let current = tx.focus(tenant, &session.project, target, false).await?;
            return Ok(as_replay(stored, Some(&current)));
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
    // Steps 4–7 against the current body, locked so that concurrent closers serialize here.
    let target = session.bound_slot.clone();
    let found = tx
        .focus(tenant, &session.project, target.as_ref(), true)
        .await?;
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
    rules::close_session(&mut session, req, kind, outcome, now_micros());

    if req.dry_run {
        let unattributed = tx.unattributed(tenant, &session).await?;
        let remaining = tx.open_agent_sessions(tenant, &session.project).await? - 1;
        drop(tx);
        let end = EndResult::build(
            session,
            outcome,
            &found,
            &req.next_focus,
            true,
            unattributed,
            remaining,
        );
        return finish(kind, end, None, None);
    }

    // Step 8: apply, with the receipt, in this transaction. The tenant's
    // ledger tip is taken last: every writer of the tenant queues on it, so
    // everything that does not need the receipt's seq is written first.
    let written_at = now_micros();
    if outcome == FocusOutcome::Applied {
        tx.write_focus(
            tenant,
            &session,
            &req.next_focus,
            found.revision + 1,
            written_at,
        )
        .await?;
    }
    let (new_session, slot) = match (kind, outcome, &target, relay_to) {
        (
            CloseKind::Relay,
            FocusOutcome::Applied | FocusOutcome::Unchanged,
            Some(slot),
            Some(to),
        ) => {
            let to = ClientKey::parse("to_client_key", to)?;
            let base = tx.focus(tenant, &session.project, None, false).await?;
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
    let unattributed = tx.unattributed(tenant, &session).await?;
    // Counted before this session's row is closed, so discount it.
    let remaining = tx.open_agent_sessions(tenant, &session.project).await? - 1;
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
    tx.store_close(tenant, &session, &req.digest, &result)
        .await?;
    let mut d = draft(Ok(()));
    d.elevated = req.allow_focus_shrink && authority;
    d.outcome = rules::close_receipt_outcome(outcome).to_owned();
    let receipt = tx.append_receipt(caller, d).await?;
    if outcome == FocusOutcome::Applied {
        tx.record_focus_history(
            tenant,
            &session,
            &req.next_focus,
            found.revision + 1,
            receipt.seq,
            written_at,
        )
        .await?;
    }
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
        CloseKind::Relay => serde_json::to_value(RelayResult {
            end,
            new_session,
            slot,
        }),
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
        Ok(Some(stored)) => return Ok(as_replay(stored, None)),
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
        return Ok(value);
    }
    tx.append_receipt(caller, draft(Ok(()))).await?;
    tx.store_close(tenant, &session, &req.digest, &value)
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
    let focus = tx
        .focus(tenant, &session.project, Some(&req.slot), false)
        .await?;
    let d = draft(
        TOOL,
        Some(&session.project),
        Some(session.session_id),
        &req.digest,
        Ok(()),
    );
    tx.append_receipt(caller, d).await?;
    tx.commit().await?;
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
    tx.ensure_tenant(tenant).await?;
    tx.ensure_project(tenant, &req.project).await?;
    let artifact = Artifact {
        artifact_id: ArtifactId::new_random(),
        project: req.project.clone(),
        session_id,
        kind: req.kind,
        text: req.text,
        tags: req.tags,
        created_at: now,
    };
    tx.insert_artifact(tenant, &artifact).await?;
    tx.append_receipt(
        caller,
        draft(TOOL, Some(&req.project), session_id, &req.digest, Ok(())),
    )
    .await?;
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

/// The briefing (SPEC §5), recalculated from its sources inside this transaction.
pub async fn briefing<T: CloseTx>(
    tx: &mut T,
    tenant: &TenantId,
    idle_secs: i64,
    session: &Session,
    slot: Option<&SlotView>,
) -> Result<Briefing, StoreError> {
    let project = &session.project;
    let base = tx.focus(tenant, project, None, false).await?;
    let recovery = match tx.previous_open(tenant, session).await? {
        None => None,
        Some((id, opened_at, last)) => Some(Recovery {
            session_id: id,
            opened_at,
            last_activity_at: last,
            idle: idle_since(last, now_micros(), idle_secs),
            ledger_size: tx.ledger_size(tenant, id).await?,
        }),
    };
    let exec_doc = tx
        .document(tenant, project, DocumentKind::ExecutiveState)
        .await?;
    let executive_state = (exec_doc.revision > 0)
        .then(|| parse_executive_state(&exec_doc.body).ok())
        .flatten();
    let mut recall = Vec::new();
    if let Some(state) = &executive_state {
        for mission in top_missions(state, 3) {
            let q = RecallQuery {
                project: project.clone(),
                tags: Vec::new(),
                query: any_word_query(&mission),
                kinds: Vec::new(),
                limit: 3,
                offset: 0,
            };
            let artifacts = tx.recall(tenant, &q).await?;
            recall.push(MissionRecall { mission, artifacts });
        }
    }
    let sync = tx.document(tenant, project, DocumentKind::SyncNote).await?;
    let mental_models = tx
        .mental_models(tenant, project)
        .await?
        .into_iter()
        .map(|d| NamedBody {
            name: d.name,
            body: d.body,
        })
        .collect();
    Ok(Briefing {
        base_focus: FocusRef {
            body: base.body,
            revision: base.revision,
        },
        slot: slot.cloned(),
        executive_state,
        brief: tx.brief(tenant, project).await?,
        mental_models,
        recall,
        inbox_count: tx.inbox_count(tenant, project).await?,
        sync_note: (sync.revision > 0).then_some(sync.body),
        open_sessions: tx.open_agent_sessions(tenant, project).await?,
        recent_sessions: tx.recent_closed(tenant, project, 5).await?,
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
    tx.ensure_tenant(tenant).await?;
    tx.ensure_project(tenant, &req.project).await?;
    let base = tx.focus(tenant, &req.project, None, false).await?;
    let slot = match &req.slot {
        Some(name) => {
            tx.ensure_slot(tenant, &req.project, name).await?;
            Some(slot_view(
                name,
                tx.focus(tenant, &req.project, Some(name), false).await?,
            ))
        }
        None => None,
    };
    let session = Session::open_agent(
        caller,
        req.project.clone(),
        req.client_key,
        req.slot,
        base.revision,
    );
    tx.insert_session(tenant, &session).await?;
    let briefing = briefing(&mut tx, tenant, idle_secs, &session, slot.as_ref()).await?;
    let d = draft(
        "brain_session_start",
        Some(&session.project),
        Some(session.session_id),
        &req.digest,
        Ok(()),
    );
    tx.append_receipt(caller, d).await?;
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
            tx.focus(tenant, &session.project, Some(name), false)
                .await?,
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
    tx.append_receipt(caller, d).await?;
    out.inbox_count = tx.inbox_count(tenant, &req.project).await?;
    tx.commit().await?;
    Ok(out)
}

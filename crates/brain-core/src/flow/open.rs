//! The calls that open or rejoin a session and brief it: start (SPEC §2.1),
//! bind (§2.2), resume (§2.3), and the briefing (§5).

use super::{WriteTx, draft, refuse};

use crate::error::StoreError;
use crate::ids::{ProjectKey, SlotName};
use crate::memory::{any_word_query, parse_executive_state, top_missions};
use crate::model::idle_since;
use crate::model::{Caller, Focus, Session, now_micros};
use crate::requests::BindRequest;
use crate::requests::{ResumeRequest, StartRequest};
use crate::rules::{self};
use crate::store::{
    BindOutcome, BriefedModel, Briefing, BriefingSources, MODELS_BUDGET_BYTES, RecallQuery,
    Recovery, SessionBriefing, SlotRef, SlotView,
};

/// Bind (SPEC §2.2): the session checks, then bind once; the same slot again is a no-op.
pub async fn bind<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &BindRequest,
) -> Result<BindOutcome, StoreError> {
    const TOOL: &str = "brain_session_bind";
    let loaded = tx.lock_session(req.session_id).await?;
    let checked = rules::check_session(
        loaded.as_ref().map(|l| &l.0),
        &req.expected_client_key,
        caller,
        rules::Door::Brain,
    )
    .and_then(|s| rules::require_open(s).map(|()| s))
    .and_then(|s| rules::check_bind(s, &req.slot).map(|_same| s.clone()));
    let mut session = match checked {
        Ok(v) => v,
        Err(e) => {
            let project = loaded.as_ref().map(|l| &l.0.project);
            let d = draft(TOOL, project, Some(req.session_id), &req.digest, Err(&e));
            return refuse(tx, caller, false, d, e).await;
        }
    };
    let now = now_micros();
    session.bound_slot = Some(req.slot.clone());
    session.last_activity_at = now;
    // The answer's revision is the one the binding records as read.
    let bind = (&session.project, &req.slot);
    let touched = tx.touch_session(session.session_id, now, Some(bind));
    let Some(focus) = touched.await? else {
        return Err(StoreError::Backend("a bind read no slot".into()));
    };
    session.read_revision = Some(focus.revision);
    let d = draft(
        TOOL,
        Some(&session.project),
        Some(session.session_id),
        &req.digest,
        Ok(()),
    );
    tx.commit(Some((caller, d))).await?;
    Ok(BindOutcome {
        session,
        slot: slot_view(&req.slot, focus),
    })
}

fn slot_view(name: &SlotName, focus: Focus) -> SlotView {
    SlotView {
        name: name.clone(),
        body: focus.body,
        revision: focus.revision,
    }
}

/// The briefing (SPEC §5), recalculated from its sources inside this
/// transaction, in one read of them all. Its recall for the executive
/// state's missions is left to [`mission_recalls`], after the commit.
pub async fn briefing<T: WriteTx>(
    tx: &mut T,
    idle_secs: i64,
    session: &Session,
    slot: Option<&SlotView>,
) -> Result<Briefing, StoreError> {
    let src = tx.briefing_sources(session).await?;
    Ok(briefing_from(idle_secs, slot, src))
}

/// The briefing from its sources, its mission recall still empty.
fn briefing_from(idle_secs: i64, slot: Option<&SlotView>, src: BriefingSources) -> Briefing {
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
    Briefing {
        base_focus: src.base,
        slot: slot.map(SlotRef::from),
        executive_state,
        brief: src.brief,
        mental_models: BriefedModel::within(src.mental_models, MODELS_BUDGET_BYTES),
        recall: Vec::new(),
        inbox_count: src.inbox_count,
        sync_note: src.sync_note,
        open_sessions: src.open_sessions,
        recent_sessions: src.recent_sessions,
        recovery,
    }
}

/// The recalls a briefing carries, one for each of the first three missions
/// of its executive state, to be read once the start or resume has
/// committed: each reads a window of the project's artifacts, and run inside
/// the write they held SQLite's one writer (every tenant's writes) through
/// three searches.
pub fn mission_recalls(project: &ProjectKey, briefing: &Briefing) -> Vec<(String, RecallQuery)> {
    let Some(state) = &briefing.executive_state else {
        return Vec::new();
    };
    top_missions(state, 3)
        .into_iter()
        .map(|mission| {
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
            (mission, q)
        })
        .collect()
}

/// Start (SPEC §2.1): open a session (binding it when asked) and brief it.
pub async fn start<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: StartRequest,
    idle_secs: i64,
) -> Result<SessionBriefing, StoreError> {
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
    let (slot_focus, src) = tx.open_session(caller, &mut session, d).await?;
    // Whichever store form opened it, what it read is in the answer (the
    // stored column is filled the same way: writes.rs, migration 0016's trigger).
    session.read_revision = Some(
        slot_focus
            .as_ref()
            .map_or(session.started_focus_revision, |f| f.revision),
    );
    let slot = match (&req.slot, slot_focus) {
        (Some(name), Some(focus)) => Some(slot_view(name, focus)),
        (Some(name), None) => Some(slot_view(name, Focus::empty())),
        (None, _) => None,
    };
    let briefing = briefing_from(idle_secs, slot.as_ref(), src);
    tx.commit(None).await?;
    super::contention::opened(&caller.tenant, session.session_id, &session.project);
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}

/// Resume (SPEC §2.3): reattach to an open session; only its activity time changes.
pub async fn resume<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &ResumeRequest,
    idle_secs: i64,
) -> Result<SessionBriefing, StoreError> {
    let loaded = tx.lock_session(req.session_id).await?;
    let mut session = rules::check_session(
        loaded.as_ref().map(|l| &l.0),
        &req.expected_client_key,
        caller,
        req.door,
    )
    .and_then(|s| rules::require_open(s).map(|()| s.clone()))?;
    session.last_activity_at = now_micros();
    tx.touch_session(session.session_id, session.last_activity_at, None)
        .await?;
    let slot = match &session.bound_slot {
        Some(name) => Some(slot_view(
            name,
            tx.focus(&session.project, Some(name)).await?,
        )),
        None => None,
    };
    let briefing = briefing(&mut tx, idle_secs, &session, slot.as_ref()).await?;
    tx.commit(None).await?;
    Ok(SessionBriefing {
        session,
        briefing,
        slot,
    })
}

//! The calls that close a session with a close decision: end and relay (SPEC §2.4).

use super::close_answer::{
    finish, mark_merge, preview, replay_diff_job, replay_needs_body_at_end,
    replay_needs_body_before, restore_session, restore_written_body, stored_form, with_diff,
};
use super::close_in_one_call::Tried;
use super::documents::write_documents;
use super::{CloseWrite, FocusWrite, StoredNextFocus, WriteTx, draft, refuse};
use serde_json::Value;

use crate::error::{DomainError, MergeNeeded, StoreError};
use crate::ids::{ClientKey, SlotName};
use crate::memory::Document;
use crate::model::{Caller, Focus, FocusOutcome, Revision, Session, now_micros};
use crate::outcome::{EndResult, as_replay, slot_after_relay};
use crate::receipt::ReceiptDraft;
use crate::requests::{EndRequest, MergeStep, OverrideGrant};
use crate::rules::{self, CloseDecision, CloseKind};
use crate::store::{LockedClose, SlotView, Unattributed};
use std::borrow::Cow;

/// A close decided (steps 1–7): what its dry run shows and step 8 writes.
pub(super) struct Decided<'a> {
    pub(super) kind: CloseKind,
    /// The request as decided: a kept or merged body in place of the proposal.
    pub(super) req: &'a EndRequest,
    pub(super) session: Session,
    /// The target body as locked.
    pub(super) found: Focus,
    pub(super) outcome: FocusOutcome,
    pub(super) unattributed: Unattributed,
    /// The project's open agent sessions once this one is closed.
    pub(super) remaining: i64,
    /// Whether an `allow_focus_shrink` of this call is in force.
    pub(super) elevated: bool,
}

impl<'a> Decided<'a> {
    /// Step 8's close of the loaded session, decided `outcome` on the request
    /// as decided, at `now`, with what its answer counts: `open_agents` is
    /// counted with this session still open, so it is discounted here.
    pub(super) fn close(
        kind: CloseKind,
        req: &'a EndRequest,
        l: LockedClose,
        outcome: FocusOutcome,
        now: chrono::DateTime<chrono::Utc>,
        (unattributed, open_agents): (Unattributed, i64),
        elevated: bool,
    ) -> Self {
        let LockedClose {
            mut session,
            target: found,
            ..
        } = l;
        rules::close_session(&mut session, req, kind, outcome, now);
        Decided {
            kind,
            req,
            session,
            found,
            outcome,
            unattributed,
            remaining: open_agents - 1,
            elevated,
        }
    }
}

/// Steps 1–3: the session exists, is the caller's to close, and is open
/// (`Ok(None)`), or this call is the one that closed it (`Ok(Some)`: its
/// stored answer).
pub(super) fn check_loaded(
    loaded: Option<&LockedClose>,
    req: &EndRequest,
    caller: &Caller,
) -> Result<Option<Value>, DomainError> {
    let l = loaded.ok_or_else(DomainError::session_not_found)?;
    rules::check_session(Some(&l.session), &req.expected_client_key, caller, req.door)?;
    rules::check_open_or_replay(&l.session, l.close_record.as_ref(), &req.digest)
}

/// End (`relay_to` None) or relay: steps 1–8 of SPEC §2.4, in one
/// transaction: load and lock, decide ([`rules`]), then answer a dry run or
/// apply.
pub async fn close<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &EndRequest,
    relay_to: Option<&str>,
) -> Result<Value, StoreError> {
    let (kind, tool) = match relay_to {
        Some(_) => (CloseKind::Relay, "brain_session_relay"),
        None => (CloseKind::End, "brain_session_end"),
    };
    // How closes go is what a shared project's contention costs: a close
    // decided on its read whose rows moved runs again with locks.
    let way = match super::close_in_one_call::try_close(&mut tx, caller, req, relay_to).await? {
        Tried::Written(answer) => {
            tx.commit(None).await?;
            metrics::counter!("brain_closes_total", "way" => "one_call").increment(1);
            return Ok(answer);
        }
        Tried::Moved => "locked_after_read",
        Tried::Contended => "locked_contended",
        Tried::No => "locked",
    };
    metrics::counter!("brain_closes_total", "way" => way).increment(1);
    let loaded = tx.lock_close(req.session_id).await?;
    let project = loaded.as_ref().map(|l| l.session.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        let id = Some(req.session_id);
        draft(tool, project.as_ref(), id, &req.digest, outcome)
    };
    // Steps 1–3.
    let checked = check_loaded(loaded.as_ref(), req, caller);
    let (l, stored) = match (loaded, checked) {
        (Some(l), Ok(stored)) => (l, stored),
        (_, Err(e)) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
        (None, Ok(_)) => return Err(StoreError::Backend("a close checked no session".into())),
    };
    if let Some(stored) = stored {
        return answer_replay(tx, caller, &l, stored).await;
    }
    let closing = Closing {
        kind,
        tool,
        relay_to,
        documents: Vec::new(),
    };
    decide_and_apply(tx, caller, req, l, closing).await
}

/// What a close is and writes besides the session: its kind and tool, a
/// relay's receiver, and documents replaced in the same transaction (the
/// brain-core profile's end).
pub(super) struct Closing<'a> {
    pub(super) kind: CloseKind,
    pub(super) tool: &'a str,
    pub(super) relay_to: Option<&'a str>,
    pub(super) documents: Vec<Document>,
}

/// Steps 4–8 for a session loaded open (`l`): the request's checks, the
/// decision against the locked body, then a dry run's preview or the writes.
pub(super) async fn decide_and_apply<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &EndRequest,
    l: LockedClose,
    closing: Closing<'_>,
) -> Result<Value, StoreError> {
    let (kind, relay_to) = (closing.kind, closing.relay_to);
    let project = Some(l.session.project.clone());
    let draft = |outcome: Result<(), &DomainError>| {
        let id = Some(req.session_id);
        draft(closing.tool, project.as_ref(), id, &req.digest, outcome)
    };
    // Steps 4–5 on the request as the agent sent it, before any merge: a
    // merge must not turn a blank proposal into a body, nor run for a
    // request whose override would be refused anyway. Looked up only when
    // asked for, inside this transaction: an elevation revoked or expired
    // before this point never counts.
    let grant = OverrideGrant {
        elevation_active: req.allow_focus_shrink
            && rules::elevation_can_count(caller)
            && tx.elevation_active(caller, req.session_id).await?,
    };
    let authority = rules::may_override(caller, kind == CloseKind::Relay, grant);
    if let Err(e) = rules::check_close_request(&l.session, req, kind, relay_to, authority) {
        return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
    }
    if let Some(base_needed) = merge_needed(req, &l.target, l.session.bound_slot.as_ref()) {
        return stop_to_merge(tx, req, l, base_needed).await;
    }
    // Steps 4–7 against the current body, locked by lock_close so that
    // concurrent closers serialize there.
    let decided_req = as_decided(req, &l.target);
    let req = decided_req.as_ref();
    let decision = rules::decide_close(&l.session, req, kind, relay_to, authority, &l.target);
    let outcome = match (decision.outcome(), decision) {
        (Some(o), _) => o,
        (None, CloseDecision::Refuse(e)) => {
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
        (None, _) => return Err(StoreError::Backend("a close decided nothing".into())),
    };
    // Taken once the locks are held, so a closer that waited on another ends after it.
    let now = now_micros();
    let counts = tx.close_counts(&l.session, now).await?;
    let elevated = req.allow_focus_shrink && authority;
    let decided = Decided::close(kind, req, l, outcome, now, counts, elevated);
    if req.dry_run {
        tx.finish_read().await?;
        return preview(caller, decided).await;
    }
    let mut receipt = draft(Ok(()));
    receipt.elevated = decided.elevated;
    receipt.outcome = rules::close_receipt_outcome(outcome).to_owned();
    apply(tx, caller, closing, decided, receipt).await
}

/// A replay answers what the call answered, its diff computed again,
/// outside the transaction, from the bodies it ran between (it is not
/// stored).
async fn answer_replay<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    l: &LockedClose,
    mut stored: Value,
) -> Result<Value, StoreError> {
    restore_session(&mut stored, &l.session)?;
    if let Some(rev) = replay_needs_body_at_end(&stored) {
        let slot = l.session.bound_slot.as_ref();
        let body = body_at(&mut tx, &l.session.project, slot, rev).await?;
        let body = body.ok_or_else(|| {
            StoreError::Backend("the revision a stored close ended on has no history row".into())
        })?;
        restore_written_body(&mut stored, body);
    }
    let before = match replay_needs_body_before(&stored) {
        Some(rev) => {
            let slot = l.session.bound_slot.as_ref();
            body_at(&mut tx, &l.session.project, slot, rev).await?
        }
        None => None,
    };
    tx.finish_read().await?;
    let job = replay_diff_job(&stored, before.as_deref());
    let answer = as_replay(stored, Some(&l.target));
    Ok(with_diff(caller.tenant.as_str(), answer, job).await)
}

/// A merging end whose revision is stale, or whose merge the focus (or the
/// session's binding) has moved past, stops here with nothing written, to
/// merge outside the transaction and come back with the merged body.
async fn stop_to_merge<T: WriteTx>(
    mut tx: T,
    req: &EndRequest,
    l: LockedClose,
    base_needed: bool,
) -> Result<Value, StoreError> {
    let slot = l.session.bound_slot.as_ref();
    let base = match base_needed {
        true => {
            let at = req.expected_focus_revision;
            body_at(&mut tx, &l.session.project, slot, at).await?
        }
        false => None,
    };
    tx.finish_read().await?;
    Err(StoreError::MergeNeeded(Box::new(MergeNeeded {
        base,
        current: l.target,
        target: l.session.bound_slot,
    })))
}

/// A focus's body at `revision`: revision 0 is the empty body every focus
/// starts from, which no history row holds.
async fn body_at<T: WriteTx>(
    tx: &mut T,
    project: &crate::ids::ProjectKey,
    slot: Option<&SlotName>,
    revision: crate::model::Revision,
) -> Result<Option<String>, StoreError> {
    if revision <= 0 {
        return Ok(Some(String::new()));
    }
    tx.focus_body_at(project, slot, revision).await
}

/// The request as decided: keep_focus ends on the body found, a merge on
/// the merged body onto the revision it was merged onto (the one found).
pub(super) fn as_decided<'a>(req: &'a EndRequest, found: &Focus) -> Cow<'a, EndRequest> {
    if req.keep_focus {
        return Cow::Owned(EndRequest {
            next_focus: found.body.clone(),
            expected_focus_revision: found.revision,
            ..req.clone()
        });
    }
    match &req.merge {
        MergeStep::Onto { onto, text, .. } => Cow::Owned(EndRequest {
            next_focus: text.clone(),
            expected_focus_revision: *onto,
            ..req.clone()
        }),
        _ => Cow::Borrowed(req),
    }
}

/// What a close hands over: every relay of a bound session answers its
/// slot as it leaves it, and one whose body applied or stood opens the
/// receiver a session bound to that slot (`Some` receiver), which starts on
/// the base focus's revision.
pub(super) fn handover(
    relay_to: Option<&str>,
    d: &Decided<'_>,
) -> Result<(Option<ClientKey>, Option<SlotView>), StoreError> {
    let (Some(slot), CloseKind::Relay) = (&d.session.bound_slot, d.kind) else {
        return Ok((None, None));
    };
    let handed = slot_after_relay(slot, d.outcome, &d.found, &d.req.next_focus);
    let (Some(to), FocusOutcome::Applied | FocusOutcome::Unchanged) = (relay_to, d.outcome) else {
        return Ok((None, Some(handed)));
    };
    let to = ClientKey::parse_for_caller("to_client_key", to)?;
    Ok((Some(to), Some(handed)))
}

/// The receiver's session of a relay that hands `handed` over to `to`,
/// started on base revision `base`; the relaying session names it.
pub(super) fn receiver_session(
    caller: &Caller,
    d: &mut Decided<'_>,
    to: ClientKey,
    handed: &SlotView,
    base: Revision,
) -> Session {
    let project = d.session.project.clone();
    let slot = Some(handed.name.clone());
    let mut next = Session::open_agent(caller, project, to, slot, base);
    next.read_revision = Some(handed.revision);
    next.relayed_from = Some(d.session.session_id);
    d.session.relayed_to = Some(next.session_id);
    next
}

/// A relay's hand-over ([`handover`]), its receiver started on the base
/// revision read here: a plain read, as the relay holds only its own slot.
async fn relay_handoff<T: WriteTx>(
    tx: &mut T,
    caller: &Caller,
    relay_to: Option<&str>,
    d: &mut Decided<'_>,
) -> Result<(Option<Session>, Option<SlotView>), StoreError> {
    let (to, handed) = handover(relay_to, d)?;
    let (Some(to), Some(handed)) = (to, handed.as_ref()) else {
        return Ok((None, handed));
    };
    let base = tx.focus(&d.session.project, None).await?.revision;
    let next = receiver_session(caller, d, to, handed, base);
    Ok((Some(next), Some(handed.clone())))
}

/// Step 8: the close, its body, a relay's new session and the receipt, in
/// this transaction; the answer stored with them so that a replay answers
/// as this call did. The tenant's ledger tip is taken last: every writer of
/// the tenant queues on it.
async fn apply<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    closing: Closing<'_>,
    mut d: Decided<'_>,
    receipt: ReceiptDraft,
) -> Result<Value, StoreError> {
    let (new_session, slot) = relay_handoff(&mut tx, caller, closing.relay_to, &mut d).await?;
    let next_session = new_session.clone();
    let (result, diff_job) = answer(&d, new_session, slot)?;
    let written = written(&d);
    let stored = stored_form(&result);
    let req = d.req;
    let write = CloseWrite {
        session: &d.session,
        focus: written,
        next_session: next_session.as_ref(),
        next_focus: StoredNextFocus::of(&d.session, written.as_ref(), Some(&d.found)),
        digest: &req.digest,
        result: &stored,
        receipt,
    };
    write_documents(&mut tx, &d.session.project, &closing.documents).await?;
    tx.apply_close(caller, write).await?;
    tx.commit(None).await?;
    Ok(with_diff(caller.tenant.as_str(), result, diff_job).await)
}

/// A decided close's answer (`focus_diff` left empty), and the diff to
/// compute into it after the commit: the diff is CPU whose cost grows with
/// the bodies, so it is computed off the transaction (and not stored; a
/// replay computes it again).
pub(super) fn answer(
    d: &Decided<'_>,
    new_session: Option<Session>,
    slot: Option<SlotView>,
) -> Result<(Value, Option<crate::diff::DiffJob>), StoreError> {
    // A relay's new session is one of those left open.
    let remaining = d.remaining + i64::from(new_session.is_some());
    let (req, found, outcome) = (d.req, &d.found, d.outcome);
    let diff_job = EndResult::diff_job(outcome, found, &req.next_focus);
    let end = EndResult::build(
        d.session.clone(),
        outcome,
        found,
        &req.next_focus,
        String::new(),
        false,
        d.unattributed.clone(),
        remaining,
    );
    let mut result = finish(d.kind, end, new_session, slot)?;
    mark_merge(&mut result, &req.merge, outcome);
    Ok((result, diff_job))
}

/// The target body a decided close writes: the proposal, when it applied.
pub(super) fn written<'a>(d: &'a Decided<'_>) -> Option<FocusWrite<'a>> {
    (d.outcome == FocusOutcome::Applied).then_some(FocusWrite {
        session: &d.session,
        body: &d.req.next_focus,
        revision: d.found.revision + 1,
        at: now_micros(),
    })
}

/// Whether a close must stop to merge (see [`MergeStep`]), and then whether
/// it must read the body the session read (the first stop only). `bound` is
/// the focus the session ends on now: a bind since the merge moved it.
fn merge_needed(req: &EndRequest, found: &Focus, bound: Option<&SlotName>) -> Option<bool> {
    match &req.merge {
        MergeStep::Asked if !req.keep_focus && req.expected_focus_revision < found.revision => {
            Some(true)
        }
        MergeStep::Onto { onto, target, .. }
            if *onto != found.revision || target.as_ref() != bound =>
        {
            Some(false)
        }
        _ => None,
    }
}

//! The calls that close a session: end and relay (SPEC §2.4), abandon (§2.6).

use super::close_answer::{
    finish, mark_merge, replay_diff_job, replay_needs_body_before, with_diff,
};
use super::{CloseWrite, FocusWrite, WriteTx, draft, refuse};
use serde_json::Value;

use crate::diff;
use crate::error::{DomainError, MergeNeeded, StoreError};
use crate::ids::{ClientKey, SlotName};
use crate::model::{Caller, Focus, FocusOutcome, Session, SessionStatus, now_micros};
use crate::outcome::{AbandonResult, EndResult, as_replay, slot_after_relay};
use crate::requests::{AbandonRequest, EndRequest, MergeStep, OverrideGrant};
use crate::rules::{self, CloseDecision, CloseKind};
use crate::store::LockedClose;

/// End (`relay_to` None) or relay: steps 1–8 of SPEC §2.4, in one transaction.
pub async fn close<T: WriteTx>(
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
    let loaded = tx.lock_close(req.session_id).await?;
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
        Some(l) => {
            match rules::check_session(Some(&l.session), &req.expected_client_key, caller, req.door)
            {
                Ok(_) => l,
                Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
            }
        }
        None => {
            let e = DomainError::session_not_found();
            return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
        }
    };
    // Step 3.
    match rules::check_open_or_replay(&session, close_record.as_ref(), &req.digest) {
        Ok(Some(stored)) => {
            // The diff is not stored: it is computed again, outside the
            // transaction, from the bodies it ran between.
            let before = match replay_needs_body_before(&stored) {
                Some(rev) => {
                    let slot = session.bound_slot.as_ref();
                    tx.focus_body_at(&session.project, slot, rev).await?
                }
                None => None,
            };
            tx.finish_read().await?;
            let job = replay_diff_job(&stored, before.as_deref());
            return Ok(with_diff(tenant.as_str(), as_replay(stored, Some(&found)), job).await);
        }
        Ok(None) => {}
        Err(e) => return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await,
    }
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
    if let Err(e) = rules::check_close_request(&session, req, kind, relay_to, authority) {
        return refuse(tx, caller, req.dry_run, draft(Err(&e)), e).await;
    }
    // A merging end whose revision is stale, or whose merge the focus (or
    // the session's binding) has moved past, stops here (nothing written) to
    // merge outside the transaction, and comes back with the merged body.
    if let Some(base_needed) = merge_needed(req, &found, session.bound_slot.as_ref()) {
        let base = match base_needed {
            true => {
                let slot = session.bound_slot.as_ref();
                let at = req.expected_focus_revision;
                tx.focus_body_at(&session.project, slot, at).await?
            }
            false => None,
        };
        tx.finish_read().await?;
        return Err(StoreError::MergeNeeded(Box::new(MergeNeeded {
            base,
            current: found,
            target: session.bound_slot.clone(),
        })));
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
    } else if let MergeStep::Onto { onto, text, .. } = &req.merge {
        // The merged body, onto the revision it was merged onto (the one found).
        kept = EndRequest {
            next_focus: text.clone(),
            expected_focus_revision: *onto,
            ..req.clone()
        };
        &kept
    } else {
        req
    };
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
    let (unattributed, open_agent_sessions) = tx.close_counts(&session, now).await?;
    // Counted before this session's row is closed, so discount it.
    let remaining = open_agent_sessions - 1;

    if req.dry_run {
        tx.finish_read().await?;
        // As the real call would count: a relay that applies opens one more.
        let would_open = kind == CloseKind::Relay
            && matches!(outcome, FocusOutcome::Applied | FocusOutcome::Unchanged);
        let diff = match EndResult::diff_job(outcome, &found, &req.next_focus) {
            Some(job) => diff::unified_bounded(tenant.as_str(), job).await,
            None => String::new(),
        };
        let end = EndResult::build(
            session,
            outcome,
            &found,
            &req.next_focus,
            diff,
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
        let mut out = finish(kind, end, None, slot)?;
        mark_merge(&mut out, &req.merge, outcome);
        return Ok(out);
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
            let to = ClientKey::parse_for_caller("to_client_key", to)?;
            let base = tx.focus(&session.project, None).await?;
            let mut next = Session::open_agent(
                caller,
                session.project.clone(),
                to,
                Some(slot.clone()),
                base.revision,
            );
            let handed = slot_after_relay(slot, outcome, &found, &req.next_focus);
            next.read_revision = Some(handed.revision);
            next.relayed_from = Some(session.session_id);
            session.relayed_to = Some(next.session_id);
            (Some(next), Some(handed))
        }
        (CloseKind::Relay, _, Some(slot), _) => (
            None,
            Some(slot_after_relay(slot, outcome, &found, &req.next_focus)),
        ),
        _ => (None, None),
    };
    // A relay's new session is one of those left open.
    let remaining = remaining + i64::from(new_session.is_some());
    // The diff is CPU whose cost grows with the bodies: it is computed after
    // the commit, off the transaction (and not stored; a replay computes it again).
    let diff_job = EndResult::diff_job(outcome, &found, &req.next_focus);
    let end = EndResult::build(
        session.clone(),
        outcome,
        &found,
        &req.next_focus,
        String::new(),
        false,
        unattributed,
        remaining,
    );
    let next_session = new_session.clone();
    let mut result = finish(kind, end, new_session, slot)?;
    // Stored with the rest: a replay answers as this call did.
    mark_merge(&mut result, &req.merge, outcome);
    let written = (outcome == FocusOutcome::Applied).then_some(FocusWrite {
        session: &session,
        body: &req.next_focus,
        revision: found.revision + 1,
        at: now_micros(),
    });
    let mut receipt = draft(Ok(()));
    receipt.elevated = req.allow_focus_shrink && authority;
    receipt.outcome = rules::close_receipt_outcome(outcome).to_owned();
    let write = CloseWrite {
        session: &session,
        focus: written,
        next_session: next_session.as_ref(),
        digest: &req.digest,
        result: &result,
        receipt,
    };
    tx.apply_close(caller, write).await?;
    tx.commit(None).await?;
    Ok(with_diff(tenant.as_str(), result, diff_job).await)
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

/// Abandon (SPEC §2.6): steps 1–3, a non-blank reason, consent; no focus write.
pub async fn abandon<T: WriteTx>(
    mut tx: T,
    caller: &Caller,
    req: &AbandonRequest,
) -> Result<Value, StoreError> {
    const TOOL: &str = "brain_session_abandon";
    let loaded = tx.lock_session(req.session_id).await?;
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
    let (mut session, close_record) = match rules::check_session(
        loaded.as_ref().map(|l| &l.0),
        &req.expected_client_key,
        caller,
        rules::Door::Brain,
    ) {
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
    let write = CloseWrite {
        session: &session,
        focus: None,
        next_session: None,
        digest: &req.digest,
        result: &value,
        receipt: draft(Ok(())),
    };
    tx.apply_close(caller, write).await?;
    tx.commit(None).await?;
    Ok(value)
}

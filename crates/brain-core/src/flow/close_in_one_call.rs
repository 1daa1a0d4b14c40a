//! An end or relay decided on a read without locks and written in one call,
//! where the store has such a call (PostgreSQL's joins the tenant's group
//! commit, so the closes of one tenant share the ledger tip's hand-over and
//! the commit's flush, as its starts and remembers do).
//!
//! Only a plain close goes this way: no dry run, no merge step, no override
//! asked for. A relay's receiver starts on the base revision read with it,
//! as the locked relay's starts on a plain read of it. The call writes only
//! if the session is still open and bound
//! as read, its target body is still at the revision read, and the counts
//! in its answer, counted again once it holds both, are as read: so the
//! decision and answer it writes are the ones a locked read would have
//! made (the ends on one focus serialize on its body; each counts the
//! sessions the ones before it left open). When anything moved (or another
//! writer holds the rows), it writes nothing and the end runs again the
//! usual way, with locks. Every refusal and every replay goes that way too:
//! they are decided, written and answered there.

use serde_json::Value;

use super::close::{
    Decided, answer, as_decided, check_loaded, handover, receiver_session, written,
};
use super::close_answer::{stored_form, with_diff};
use super::contention;
use super::{CloseWrite, DecidedOn, PeekedClose, StoredNextFocus, WriteTx, draft};
use crate::error::StoreError;
use crate::model::{Caller, now_micros};
use crate::requests::{EndRequest, MergeStep, OverrideGrant};
use crate::rules::{self, CloseKind};

/// How a close tried to go in one call. Every way but `Written` wrote
/// nothing, and the close runs with locks.
pub(super) enum Tried {
    /// Written and committed: the answer.
    Written(Value),
    /// Decided on the read, but what it was decided on moved before the
    /// write (or another writer held its rows).
    Moved,
    /// Not a close that goes this way (a dry run, a merge, an override, a
    /// refusal, a replay), or a store without the call.
    No,
    /// Its project's closes found their rows moved lately ([`contention`]):
    /// not tried, as it would most likely be written for nothing.
    Contended,
}

/// The end (`relay_to` None) or relay, decided on a read without locks
/// and written in one call where it can be ([`Tried`]).
pub(super) async fn try_close<T: WriteTx>(
    tx: &mut T,
    caller: &Caller,
    req: &EndRequest,
    relay_to: Option<&str>,
) -> Result<Tried, StoreError> {
    if req.dry_run || req.allow_focus_shrink || !matches!(req.merge, MergeStep::Off) {
        return Ok(Tried::No);
    }
    // Known here: decided now, and the project is not asked again below.
    let known = contention::session_hint(&caller.tenant, req.session_id);
    let knows = known.is_some();
    let mut probe = None;
    if known.is_some_and(|h| h.holds(&mut probe)) {
        return Ok(Tried::Contended);
    }
    let now = now_micros();
    let Some(PeekedClose {
        loaded: Some(l),
        unattributed,
        open_agents,
        base_revision,
    }) = tx.peek_close(req.session_id, now).await?
    else {
        return Ok(Tried::No);
    };
    if !matches!(check_loaded(Some(&l), req, caller), Ok(None)) {
        return Ok(Tried::No);
    }
    let project = l.session.project.clone();
    if !knows && contention::project_hint(&caller.tenant, &project).holds(&mut probe) {
        return Ok(Tried::Contended);
    }
    let (kind, tool) = match relay_to {
        Some(_) => (CloseKind::Relay, "brain_session_relay"),
        None => (CloseKind::End, "brain_session_end"),
    };
    let authority = rules::may_override(
        caller,
        kind == CloseKind::Relay,
        OverrideGrant {
            elevation_active: false,
        },
    );
    if rules::check_close_request(&l.session, req, kind, relay_to, authority).is_err() {
        return Ok(Tried::No);
    }
    let decided_req = as_decided(req, &l.target);
    let req = decided_req.as_ref();
    let decision = rules::decide_close(&l.session, req, kind, relay_to, authority, &l.target);
    let Some(outcome) = decision.outcome() else {
        return Ok(Tried::No);
    };
    let read = l.target.revision;
    let mut d = Decided::close(
        kind,
        req,
        l,
        outcome,
        now,
        (unattributed, open_agents),
        false,
    );
    let (to, handed) = handover(relay_to, &d)?;
    let next = match (to, handed.as_ref()) {
        (Some(to), Some(h)) => Some(receiver_session(caller, &mut d, to, h, base_revision)),
        _ => None,
    };
    let (result, diff_job) = answer(&d, next.clone(), handed)?;
    let stored = stored_form(&result);
    let mut receipt = draft(
        tool,
        Some(&d.session.project),
        Some(req.session_id),
        &req.digest,
        Ok(()),
    );
    receipt.outcome = rules::close_receipt_outcome(outcome).to_owned();
    let focus = written(&d);
    let write = CloseWrite {
        session: &d.session,
        focus,
        next_session: next.as_ref(),
        next_focus: StoredNextFocus::of(&d.session, focus.as_ref(), Some(&d.found)),
        digest: &req.digest,
        result: &stored,
        receipt,
    };
    let on = DecidedOn {
        found: read,
        until: now,
        unattributed: &d.unattributed,
        open_agents,
    };
    if !tx.close_in_one_call(caller, write, on).await? {
        contention::note(&caller.tenant, &project);
        if let Some(p) = probe {
            p.settle();
        }
        return Ok(Tried::Moved);
    }
    contention::clear(&caller.tenant, &project);
    if let Some(p) = probe {
        p.settle();
    }
    Ok(Tried::Written(
        with_diff(caller.tenant.as_str(), result, diff_job).await,
    ))
}

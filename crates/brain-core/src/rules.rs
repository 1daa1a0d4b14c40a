//! The rules of SPEC §2.2–2.7 as pure functions over loaded state.
//!
//! A backend locks the session row, calls [`check_session`] (steps 1–2) and
//! [`check_open_or_replay`] (step 3), then locks the focus row and calls
//! [`decide_close`] (steps 4–7). Whatever these return is final: the backend
//! applies it and writes the receipt in the same transaction.

use serde_json::{Value, json};

use crate::error::{DomainError, ErrorCode};
use crate::ids::ClientKey;
use chrono::{DateTime, Utc};

use crate::model::{
    Caller, CredentialKind, Focus, FocusOutcome, Revision, Role, Session, SessionKind,
    SessionStatus,
};
use crate::requests::{EndRequest, MergeStep, OverrideGrant};

/// What a closed session remembers of the call that closed it (SPEC §3.5).
#[derive(Debug, Clone, PartialEq)]
pub struct CloseRecord {
    pub digest: String,
    pub result: Value,
}

/// Which door a session call came through: brain's own tools, or a
/// compatibility profile's adapter (SPEC §2.10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Door {
    #[default]
    Brain,
    Profile,
}

/// Whether `session` belongs to a compatibility profile: a raw runtime
/// session (reserved project) or one a profile opened under its own client
/// key. Such a key is derived from the subject, so anyone could name it: it
/// is not what guards these sessions, the credential that opened them is.
pub fn profile_owned(session: &Session) -> bool {
    session.project.is_reserved() || ClientKey::has_profile_prefix(session.client_key.as_str())
}

/// Whether `caller` is the credential, with the same role, that opened `session`.
pub fn opened_by_caller(session: &Session, caller: &Caller) -> bool {
    let by = &session.opened_by;
    let same_credential = match &by.credential_id {
        Some(id) => id == &caller.credential_id,
        // Rows written before the credential was recorded.
        None => by.kind == caller.kind && by.subject == caller.subject,
    };
    same_credential && by.role == caller.role
}

/// Steps 1–2: the session exists in this tenant, is not a tracer, and the
/// caller named its client key. A reserved project's sessions exist only for
/// the profile that keeps them, and a profile's sessions answer only the
/// credential and role that opened them.
pub fn check_session<'a>(
    session: Option<&'a Session>,
    expected_client_key: &str,
    caller: &Caller,
    door: Door,
) -> Result<&'a Session, DomainError> {
    let session = session.ok_or_else(DomainError::session_not_found)?;
    if session.kind == SessionKind::Tracer {
        return Err(DomainError::new(
            ErrorCode::TracerSession,
            "this is a connection's tracer session, which lifecycle tools never touch; use a session from brain_session_start",
        ));
    }
    if session.project.is_reserved() && door == Door::Brain {
        return Err(DomainError::session_not_found());
    }
    if session.client_key.as_str() != expected_client_key {
        return Err(DomainError::new(
            ErrorCode::ClientKeyMismatch,
            "expected_client_key does not match the session's client_key; pass the client_key the session was started with",
        ));
    }
    if profile_owned(session) && !opened_by_caller(session, caller) {
        return Err(DomainError::new(
            ErrorCode::ClientKeyMismatch,
            "this session was opened through a compatibility profile by another credential or role; only that credential, with that role, can use it",
        ));
    }
    Ok(session)
}

/// Step 3. `Ok(None)`: the session is open. `Ok(Some(result))`: an exact replay of
/// the call that closed it, to be answered with the stored result. Anything
/// else on a closed session is `session_closed`.
pub fn check_open_or_replay(
    session: &Session,
    close: Option<&CloseRecord>,
    digest: &str,
) -> Result<Option<Value>, DomainError> {
    if session.is_open() {
        return Ok(None);
    }
    if let Some(close) = close
        && close.digest == digest
    {
        return Ok(Some(close.result.clone()));
    }
    Err(session_closed(session))
}

/// A mutation on a closed session without replay (bind, remember).
pub fn require_open(session: &Session) -> Result<(), DomainError> {
    if session.is_open() {
        Ok(())
    } else {
        Err(session_closed(session))
    }
}

fn session_closed(session: &Session) -> DomainError {
    DomainError::new(
        ErrorCode::SessionClosed,
        format!(
            "the session is already {} and accepts no further changes; start a new session",
            session.status
        ),
    )
    .with_details(json!({ "status": session.status.as_str() }))
}

/// A blank value (empty or whitespace only) is refused, naming the field.
pub fn require_not_blank(field: &str, value: &str) -> Result<(), DomainError> {
    if value.trim().is_empty() {
        Err(DomainError::invalid_argument(field, "must not be blank"))
    } else {
        Ok(())
    }
}

/// SPEC §2.4 step 5 and §2.5: who may set `allow_focus_shrink`.
/// Shared-token and stdio callers never may; a JWT caller may with an active
/// elevation when its own token has role `operator` (authority follows the
/// token: an agent or relay token of the same subject never rides it), or on a
/// relay when its role is `operator` or `relay`.
pub fn may_override(caller: &Caller, is_relay: bool, grant: OverrideGrant) -> bool {
    match caller.kind {
        CredentialKind::SharedToken | CredentialKind::Stdio | CredentialKind::Cli => false,
        CredentialKind::Jwt => {
            (grant.elevation_active && caller.role == Role::Operator)
                || (is_relay && matches!(caller.role, Role::Operator | Role::Relay))
        }
    }
}

/// Whether an elevation can count for this caller at all; when it cannot, the
/// store is not even asked.
pub fn elevation_can_count(caller: &Caller) -> bool {
    caller.kind == CredentialKind::Jwt && caller.role == Role::Operator
}

/// A refused shrink: lengths in Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shrink {
    pub current: usize,
    pub proposed: usize,
    pub floor: usize,
}

/// SPEC §2.4 step 6: `len(new) * 10 < len(current) * 7` refuses;
/// `floor = ceil(0.7 × current)`. An empty current body accepts anything.
pub fn shrink_guard(current: &str, proposed: &str) -> Option<Shrink> {
    let current = current.chars().count();
    let proposed = proposed.chars().count();
    if proposed.saturating_mul(10) < current.saturating_mul(7) {
        Some(Shrink {
            current,
            proposed,
            floor: current.saturating_mul(7).div_ceil(10),
        })
    } else {
        None
    }
}

/// The outcome of steps 4–7 for an open session.
#[derive(Debug, Clone, PartialEq)]
pub enum CloseDecision {
    /// Refused: write the receipt only; the session stays open.
    Refuse(DomainError),
    /// Stale revision: close the session as `conflicted`, write no focus.
    Conflict,
    /// Write `next_focus` as revision `current + 1`.
    Apply { new_revision: Revision },
    /// `next_focus` equals the current body: close without a new revision.
    Unchanged,
}

impl CloseDecision {
    /// The focus outcome of a decision that closes the session (`None` for a refusal).
    pub fn outcome(&self) -> Option<FocusOutcome> {
        match self {
            Self::Refuse(_) => None,
            Self::Conflict => Some(FocusOutcome::Conflict),
            Self::Apply { .. } => Some(FocusOutcome::Applied),
            Self::Unchanged => Some(FocusOutcome::Unchanged),
        }
    }
}

/// The session as a closing end or relay leaves it (SPEC §1 status table):
/// `conflicted` on a stale revision, else `ended` or `relayed`.
pub fn close_session(
    session: &mut Session,
    req: &EndRequest,
    kind: CloseKind,
    outcome: FocusOutcome,
    now: DateTime<Utc>,
) {
    session.status = match (outcome, kind) {
        (FocusOutcome::Conflict, _) => SessionStatus::Conflicted,
        (_, CloseKind::End) => SessionStatus::Ended,
        (_, CloseKind::Relay) => SessionStatus::Relayed,
    };
    session.ended_at = Some(now);
    session.last_activity_at = now;
    session.summary = Some(req.summary.clone());
    session.next_focus = Some(req.next_focus.clone());
    session.nothing_to_capture_reason = req.nothing_to_capture_reason.clone();
    session.focus_outcome = Some(outcome);
}

/// A closing call's receipt outcome: `conflict` when the session closed on a
/// stale revision, else `ok`.
pub fn close_receipt_outcome(outcome: FocusOutcome) -> &'static str {
    if outcome == FocusOutcome::Conflict {
        "conflict"
    } else {
        "ok"
    }
}

/// Whether an end or a relay is deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseKind {
    End,
    Relay,
}

/// Steps 4–7 of SPEC §2.4 for an open agent session, against the CURRENT body
/// of its target (slot when bound, base focus otherwise). `to_client_key` is
/// the relay's receiver (checked for blankness at step 4).
pub fn decide_close(
    session: &Session,
    req: &EndRequest,
    kind: CloseKind,
    to_client_key: Option<&str>,
    override_authority: bool,
    current: &Focus,
) -> CloseDecision {
    match decide_close_inner(
        session,
        req,
        kind,
        to_client_key,
        override_authority,
        current,
    ) {
        Ok(d) => d,
        Err(e) => CloseDecision::Refuse(e),
    }
}

/// Steps 4–5 of an end or relay (and the relay's slot): what the request
/// itself must satisfy, whatever the focus holds.
pub fn check_close_request(
    session: &Session,
    req: &EndRequest,
    kind: CloseKind,
    to_client_key: Option<&str>,
    override_authority: bool,
) -> Result<(), DomainError> {
    if kind == CloseKind::Relay && session.bound_slot.is_none() {
        return Err(DomainError::new(
            ErrorCode::RelayRequiresSlot,
            "only a session bound to a slot can be relayed; bind it with brain_session_bind, or end it with brain_session_end",
        ));
    }
    // Step 4.
    require_not_blank("summary", &req.summary)?;
    if !req.keep_focus {
        require_not_blank("next_focus", &req.next_focus)?;
    }
    if let Some(reason) = &req.nothing_to_capture_reason {
        require_not_blank("nothing_to_capture_reason", reason)?;
    }
    if let Some(to) = to_client_key {
        require_not_blank("to_client_key", to)?;
    }
    // Step 5.
    if req.allow_focus_shrink && !override_authority {
        return Err(DomainError::new(
            ErrorCode::FocusShrinkOverrideRefused,
            "allow_focus_shrink needs an active /brain-admin elevation for this credential and connection; call again without it and carry the durable content over",
        ));
    }
    Ok(())
}

fn decide_close_inner(
    session: &Session,
    req: &EndRequest,
    kind: CloseKind,
    to_client_key: Option<&str>,
    override_authority: bool,
    current: &Focus,
) -> Result<CloseDecision, DomainError> {
    check_close_request(session, req, kind, to_client_key, override_authority)?;
    // Step 6.
    let override_in_force = req.allow_focus_shrink && override_authority;
    if !override_in_force && let Some(s) = shrink_guard(&current.body, &req.next_focus) {
        let (code, what) = if session.bound_slot.is_some() {
            (ErrorCode::SlotFocusShrink, "slot_focus_shrink")
        } else {
            (ErrorCode::BaseFocusShrink, "base_focus_shrink")
        };
        // The common two-agent case: a shorter body written on a stale
        // revision. Carrying content over needs the current body, which the
        // agent has not seen: say so, and which revision is current.
        // A merged body stands on the revision merged onto; the agent read
        // the merge's base, which is what it must hear is stale.
        let (read, merged) = match &req.merge {
            MergeStep::Onto { base_revision, .. } => (*base_revision, true),
            _ => (req.expected_focus_revision, false),
        };
        let stale = read != current.revision;
        let message = if merged {
            format!(
                "next_focus merged into revision {} has {} characters, the floor is {} of {}: it drops content the current body has; read it (brain_focus_get), carry its durable content over and call again with revision {} ({what})",
                current.revision, s.proposed, s.floor, s.current, current.revision
            )
        } else if stale {
            format!(
                "next_focus has {} characters, the floor is {} of {}, and expected_focus_revision {} is stale (the current revision is {}); read the current body first (brain_focus_get), carry its durable content over and call again with revision {} ({what})",
                s.proposed, s.floor, s.current, read, current.revision, current.revision
            )
        } else {
            format!(
                "next_focus has {} characters, the floor is {} of {}; carry the durable content over and call again ({what})",
                s.proposed, s.floor, s.current
            )
        };
        let mut details = json!({
            "current": s.current,
            "proposed": s.proposed,
            "floor": s.floor,
        });
        if stale {
            details["stale"] = json!(true);
            details["current_revision"] = json!(current.revision);
        }
        return Err(DomainError::new(code, message).with_details(details));
    }
    // Step 7.
    if req.expected_focus_revision != current.revision {
        return Ok(CloseDecision::Conflict);
    }
    if req.next_focus == current.body {
        return Ok(CloseDecision::Unchanged);
    }
    Ok(CloseDecision::Apply {
        new_revision: current.revision + 1,
    })
}

/// Abandon (SPEC §2.6) after steps 1–3: a non-blank reason, then consent.
pub fn check_abandon(reason: &str, confirm: bool, dry_run: bool) -> Result<(), DomainError> {
    require_not_blank("reason", reason)?;
    if !confirm && !dry_run {
        return Err(DomainError::new(
            ErrorCode::ConfirmRequired,
            "abandoning closes the session without writing focus; call again with confirm: true, or dry_run: true to preview",
        ));
    }
    Ok(())
}

/// Bind (SPEC §2.2) after steps 1–2 and [`require_open`]: `Ok(true)` when the
/// session is already bound to this slot (an idempotent no-op).
pub fn check_bind(session: &Session, slot: &crate::ids::SlotName) -> Result<bool, DomainError> {
    match &session.bound_slot {
        None => Ok(false),
        Some(bound) if bound == slot => Ok(true),
        Some(bound) => Err(DomainError::new(
            ErrorCode::AlreadyBound,
            format!(
                "the session is already bound to slot {bound}; a session binds once, so start another session for this slot"
            ),
        )
        .with_details(json!({ "bound_slot": bound.as_str() }))),
    }
}

#[cfg(test)]
mod tests;

//! What an end or relay answers: its diff (computed off the transaction,
//! and again for a replay, from the bodies it ran between), a merge's note,
//! and the relay's shape.

use serde_json::{Value, json};

use crate::diff::{self, DiffJob};
use crate::error::StoreError;
use crate::model::Caller;
use crate::model::{FocusOutcome, Revision, Session};
use crate::outcome::slot_after_relay;
use crate::outcome::{EndResult, RelayResult, session_as_answered};
use crate::requests::MergeStep;
use crate::rules::CloseKind;
use crate::store::SlotView;

use super::close::Decided;

/// A merging end's answer says so: `focus_outcome` is `merged` when the
/// merged body was written, and `merge` names the revisions merged (or, when
/// the merge did not come out clean, the text with its conflict markers).
pub(super) fn mark_merge(out: &mut Value, merge: &MergeStep, outcome: FocusOutcome) {
    let Value::Object(m) = out else { return };
    match merge {
        MergeStep::Onto {
            base_revision,
            onto,
            ..
        } => {
            if outcome == FocusOutcome::Applied {
                m.insert("focus_outcome".into(), json!(MERGED));
                if m.get("would").is_some_and(|w| !w.is_null()) {
                    m.insert("would".into(), json!(MERGED));
                }
            }
            m.insert(
                "merge".into(),
                json!({"base_revision": base_revision, "onto_revision": onto, "conflicts": false}),
            );
        }
        MergeStep::Failed(note) => {
            m.insert("merge".into(), note.clone());
        }
        MergeStep::Off | MergeStep::Asked => {}
    }
}

/// The `focus_outcome` of an end whose merged body was written.
pub const MERGED: &str = "merged";

/// Whether a stored `focus_outcome` wrote a body (applied, or merged).
pub fn wrote_body(focus_outcome: &str) -> bool {
    focus_outcome == FocusOutcome::Applied.as_str() || focus_outcome == MERGED
}

/// `out` with its `focus_diff` computed from `job` (bounded: see [`diff`]).
pub(super) async fn with_diff(tenant: &str, mut out: Value, job: Option<DiffJob>) -> Value {
    if let Some(job) = job {
        let diff = diff::unified_bounded(tenant, job).await;
        if let Value::Object(m) = &mut out {
            m.insert("focus_diff".into(), Value::String(diff));
        }
    }
    out
}

/// Where an end's or relay's answer carries the body it ended on: a relay
/// that answers its slot carries it there, other closes in `focus_at_end`.
fn at_end_body_key(answer: &Value) -> Option<&'static str> {
    if answer.get("focus_at_end").is_some_and(Value::is_object) {
        Some("focus_at_end")
    } else if answer.get("slot").is_some_and(Value::is_object) {
        Some("slot")
    } else {
        None
    }
}

/// The answer as stored for a replay, holding no fact the database already
/// holds once elsewhere:
/// - no `session`: the closed session is the row this close wrote, which no
///   write changes after it ([`restore_session`] puts it back from the row);
/// - no body at its end: the body it ended on, at a revision above 0, is the
///   focus history row of that revision, whether the close wrote it
///   (applied, merged) or found it there (unchanged, conflict)
///   ([`restore_written_body`] puts it back).
///
/// Answers stored before either rule are read as they are.
pub(super) fn stored_form(answer: &Value) -> Value {
    let mut stored = answer.clone();
    if let Value::Object(m) = &mut stored {
        m.remove("session");
    }
    let in_history = stored
        .get("focus_revision_at_end")
        .and_then(Value::as_i64)
        .is_some_and(|r| r > 0);
    if let (true, Some(key)) = (in_history, at_end_body_key(&stored))
        && let Some(Value::Object(m)) = stored.get_mut(key)
    {
        m.remove("body");
    }
    stored
}

/// The revision whose history row holds the body a stored answer left out
/// ([`stored_form`]); `None` for an answer stored whole (every answer stored
/// before the body was left out, and every close that ended on revision 0).
pub(super) fn replay_needs_body_at_end(stored: &Value) -> Option<Revision> {
    let held = stored.get(at_end_body_key(stored)?)?.get("body").is_some();
    let revision = stored.get("focus_revision_at_end")?.as_i64()?;
    (!held && revision > 0).then_some(revision)
}

/// Put back the closed session [`stored_form`] left out, from its row as the
/// replay read it, as the close answered it ([`session_as_answered`]; a
/// stored `merged` is an applied body). An answer stored with its session
/// keeps that one.
pub(super) fn restore_session(stored: &mut Value, session: &Session) -> Result<(), StoreError> {
    let Value::Object(m) = stored else {
        return Ok(());
    };
    if m.contains_key("session") {
        return Ok(());
    }
    let outcome = m
        .get("focus_outcome")
        .and_then(Value::as_str)
        .and_then(FocusOutcome::parse)
        .unwrap_or(FocusOutcome::Applied);
    let session = session_as_answered(session.clone(), outcome);
    let session = serde_json::to_value(session).map_err(StoreError::backend)?;
    m.insert("session".into(), session);
    Ok(())
}

/// Put the body [`stored_form`] left out back where the answer carried it.
pub(super) fn restore_written_body(stored: &mut Value, body: String) {
    if let Some(key) = at_end_body_key(stored)
        && let Some(Value::Object(m)) = stored.get_mut(key)
    {
        m.insert("body".into(), Value::String(body));
    }
}

/// The body a stored end or relay needs to compute its diff again: the
/// previous revision's, when it applied.
pub(super) fn replay_needs_body_before(stored: &Value) -> Option<Revision> {
    let applied = wrote_body(stored.get("focus_outcome")?.as_str()?);
    let at_end = stored.get("focus_revision_at_end")?.as_i64()?;
    applied.then_some(at_end - 1)
}

/// The diff a stored end or relay answered with, from its stored bodies (and
/// `before`, the previous revision's body, when it applied).
pub(super) fn replay_diff_job(stored: &Value, before: Option<&str>) -> Option<DiffJob> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let at_end = text(stored.pointer("/focus_at_end/body"))
        .or_else(|| text(stored.pointer("/slot/body")))?;
    let revision = stored.get("focus_revision_at_end")?.as_i64()?;
    match stored.get("focus_outcome")?.as_str()? {
        o if wrote_body(o) => Some(DiffJob::new(
            before?,
            &at_end,
            format!("revision {}", revision - 1),
            format!("revision {revision}"),
        )),
        o if o == FocusOutcome::Conflict.as_str() => Some(DiffJob::new(
            &text(stored.pointer("/session/next_focus"))?,
            &at_end,
            "proposal".to_owned(),
            format!("revision {revision}"),
        )),
        _ => None,
    }
}

pub(super) fn finish(
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

/// A dry run's answer: as the real call would answer, nothing written.
pub(super) async fn preview(caller: &Caller, d: Decided<'_>) -> Result<Value, StoreError> {
    let Decided {
        kind,
        req,
        found,
        outcome,
        ..
    } = d;
    // As the real call would count: a relay that applies opens one more.
    let would_open = kind == CloseKind::Relay
        && matches!(outcome, FocusOutcome::Applied | FocusOutcome::Unchanged);
    let diff = match EndResult::diff_job(outcome, &found, &req.next_focus) {
        Some(job) => diff::unified_bounded(caller.tenant.as_str(), job).await,
        None => String::new(),
    };
    // A relay's dry run shows the slot as it would leave it, as end's dry
    // run shows focus_at_end.
    let slot = d
        .session
        .bound_slot
        .as_ref()
        .filter(|_| kind == CloseKind::Relay)
        .map(|s| slot_after_relay(s, outcome, &found, &req.next_focus));
    let remaining = d.remaining + i64::from(would_open);
    let end = EndResult::build(
        d.session,
        outcome,
        &found,
        &req.next_focus,
        diff,
        true,
        d.unattributed,
        remaining,
    );
    let mut out = finish(kind, end, None, slot)?;
    mark_merge(&mut out, &req.merge, outcome);
    Ok(out)
}

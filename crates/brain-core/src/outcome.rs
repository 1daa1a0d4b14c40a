//! The results of closing calls (end, relay, abandon), and how a replay is answered.

use serde::Serialize;
use serde_json::{Value, json};

use crate::diff::DiffJob;
use crate::model::{Focus, FocusOutcome, Revision, Session};
use crate::store::{FocusRef, SlotView, Unattributed};

/// `brain_session_end`'s output (SPEC §2.4), also the first half of relay's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndResult {
    pub session: Session,
    pub replayed: bool,
    pub dry_run: bool,
    /// On a dry run: what a real call would have done.
    pub would: Option<FocusOutcome>,
    pub focus_outcome: FocusOutcome,
    pub focus_at_end: FocusRef,
    pub focus_revision_at_end: Revision,
    /// The body as it stands when the answer is built; null when that is
    /// `focus_at_end`'s body (same revision): each body is carried once.
    pub current_focus: Option<String>,
    pub current_focus_revision: Revision,
    pub focus_diff: String,
    pub unattributed_in_window: Unattributed,
    pub remaining_open_session_count: i64,
}

impl EndResult {
    /// The diff `focus_diff` carries for `outcome`, to compute with
    /// [`crate::diff::unified_bounded`]: previous → new when applied,
    /// proposal → current on conflict (SPEC §2.4 step 7), none when unchanged.
    pub fn diff_job(outcome: FocusOutcome, found: &Focus, proposed: &str) -> Option<DiffJob> {
        match outcome {
            FocusOutcome::Applied => Some(DiffJob::new(
                &found.body,
                proposed,
                format!("revision {}", found.revision),
                format!("revision {}", found.revision + 1),
            )),
            FocusOutcome::Unchanged => None,
            FocusOutcome::Conflict => Some(DiffJob::new(
                proposed,
                &found.body,
                "proposal".to_owned(),
                format!("revision {}", found.revision),
            )),
        }
    }

    /// Fill the focus fields for `outcome`, given the body found before the
    /// call and the diff [`EndResult::diff_job`] named.
    #[allow(clippy::too_many_arguments)]
    pub fn build(
        session: Session,
        outcome: FocusOutcome,
        found: &Focus,
        proposed: &str,
        focus_diff: String,
        dry_run: bool,
        unattributed_in_window: Unattributed,
        remaining_open_session_count: i64,
    ) -> Self {
        let at_end = match outcome {
            FocusOutcome::Applied => FocusRef {
                body: proposed.to_owned(),
                revision: found.revision + 1,
            },
            FocusOutcome::Unchanged | FocusOutcome::Conflict => FocusRef {
                body: found.body.clone(),
                revision: found.revision,
            },
        };
        Self {
            session: session_as_answered(session, outcome),
            replayed: false,
            dry_run,
            would: dry_run.then_some(outcome),
            focus_outcome: outcome,
            focus_revision_at_end: at_end.revision,
            current_focus: None,
            current_focus_revision: at_end.revision,
            focus_at_end: at_end,
            focus_diff,
            unattributed_in_window,
            remaining_open_session_count,
        }
    }
}

/// The closed session as an end's (or relay's) answer shows it, built
/// fresh or rebuilt from its row for a replay:
/// - its `next_focus` only on a conflict: otherwise it is the body
///   `focus_at_end` already carries (applied or unchanged), carried once;
/// - its last activity at its end, the close's own time. The row may hold a
///   later one: PostgreSQL's one-call end keeps the time of a touch (a
///   remember in the session) that committed between its read and its write.
pub fn session_as_answered(mut session: Session, outcome: FocusOutcome) -> Session {
    if outcome != FocusOutcome::Conflict {
        session.next_focus = None;
    }
    if let Some(ended) = session.ended_at {
        session.last_activity_at = ended;
    }
    session
}

/// `brain_session_relay`'s output: end's fields plus the receiving session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelayResult {
    #[serde(flatten)]
    pub end: EndResult,
    pub new_session: Option<Session>,
    /// The slot as the new session must see it: its revision is the one to pass at its end.
    pub slot: Option<SlotView>,
}

impl RelayResult {
    /// The answer, without end's `focus_at_end` once `slot` carries the same
    /// body and revision: each body is carried once.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        let mut v = serde_json::to_value(self)?;
        if self.slot.is_some()
            && let Value::Object(m) = &mut v
        {
            m.remove("focus_at_end");
        }
        Ok(v)
    }
}

/// The relayed slot as this relay leaves it: the new body on `applied`, else as found.
pub fn slot_after_relay(
    name: &crate::ids::SlotName,
    outcome: FocusOutcome,
    found: &Focus,
    proposed: &str,
) -> SlotView {
    let (body, revision) = if outcome == FocusOutcome::Applied {
        (proposed.to_owned(), found.revision + 1)
    } else {
        (found.body.clone(), found.revision)
    };
    SlotView {
        name: name.clone(),
        body,
        revision,
    }
}

/// `brain_session_abandon`'s output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbandonResult {
    pub session: Session,
    pub replayed: bool,
    pub dry_run: bool,
    pub would: Option<&'static str>,
}

/// SPEC §3.5: a replay answers the stored result with `replayed: true` and the
/// focus as it stands now (it may have moved since).
pub fn as_replay(mut stored: Value, current: Option<&Focus>) -> Value {
    if let Value::Object(map) = &mut stored {
        map.insert("replayed".into(), json!(true));
        if let Some(current) = current {
            let same = map.get("focus_revision_at_end") == Some(&json!(current.revision));
            let body = if same {
                Value::Null
            } else {
                json!(current.body)
            };
            map.insert("current_focus".into(), body);
            map.insert("current_focus_revision".into(), json!(current.revision));
        }
    }
    stored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_marks_and_refreshes_the_current_focus() {
        let stored = json!({"replayed": false, "current_focus": "old", "current_focus_revision": 1, "focus_revision_at_end": 1});
        let now = Focus {
            body: "newer".into(),
            revision: 2,
            updated_at: None,
            updated_by_session: None,
        };
        let v = as_replay(stored, Some(&now));
        assert_eq!(v["replayed"], json!(true));
        assert_eq!(v["current_focus"], json!("newer"));
        assert_eq!(v["current_focus_revision"], json!(2));
        assert_eq!(v["focus_revision_at_end"], json!(1));
        // Not moved since: the body is the one focus_at_end carries.
        let stored = json!({"current_focus": null, "focus_revision_at_end": 2});
        let v = as_replay(stored, Some(&now));
        assert_eq!(v["current_focus"], Value::Null);
    }
}

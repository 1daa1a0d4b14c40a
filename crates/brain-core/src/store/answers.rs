//! What the session calls and the tools' reads answer.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::error::StoreError;
use crate::ids::{ArtifactId, SessionId, SlotName};
use crate::memory::{Brief, RecallHit};
use crate::model::{Focus, Revision, Session, SessionStatus};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotView {
    pub name: SlotName,
    pub body: String,
    pub revision: Revision,
}

/// A slot named without its body, where the same answer carries the body
/// elsewhere (the briefing of start and resume: the result's `slot` has it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlotRef {
    pub name: SlotName,
    pub revision: Revision,
}

impl From<&SlotView> for SlotRef {
    fn from(v: &SlotView) -> Self {
        Self {
            name: v.name.clone(),
            revision: v.revision,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FocusRef {
    pub body: String,
    pub revision: Revision,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecentSession {
    pub session_id: SessionId,
    pub status: SessionStatus,
    pub summary: Option<String>,
    #[serde(serialize_with = "crate::store::ser_opt_time")]
    pub ended_at: Option<DateTime<Utc>>,
}

/// SPEC §5 `recovery`: this client's previous agent session in the project, still open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Recovery {
    pub session_id: SessionId,
    #[serde(serialize_with = "crate::store::ser_time")]
    pub opened_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::store::ser_time")]
    pub last_activity_at: DateTime<Utc>,
    pub idle: bool,
    pub ledger_size: i64,
}

/// SPEC §5, recalculated from its sources on every call: focus and slot,
/// documents, the daily brief, recall per mission, the inbox and the sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Briefing {
    pub base_focus: FocusRef,
    /// The bound slot's name and revision; its body is the result's `slot`.
    pub slot: Option<SlotRef>,
    /// The parsed executive state, or null when none was written.
    pub executive_state: Option<Value>,
    pub brief: Option<Brief>,
    /// By name; their bodies within [`MODELS_BUDGET_BYTES`] in all.
    pub mental_models: Vec<BriefedModel>,
    /// For each of the first 3 missions, its top 3 artifacts.
    pub recall: Vec<MissionRecall>,
    /// Todo artifacts not yet acknowledged.
    pub inbox_count: i64,
    pub sync_note: Option<String>,
    pub open_sessions: i64,
    pub recent_sessions: Vec<RecentSession>,
    pub recovery: Option<Recovery>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedBody {
    pub name: String,
    pub body: String,
}

/// The bytes of mental-model bodies one briefing carries in all: a project
/// may hold 32 models of 256 KiB, and every start and resume would carry
/// them all (a 150-byte call answering megabytes).
pub const MODELS_BUDGET_BYTES: usize = 64 * 1024;

/// A mental model as a briefing carries it: whole, or, once the briefing's
/// budget for models is spent, by name only (`truncated`, empty `body`: read
/// it with brain_document_get).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BriefedModel {
    pub name: String,
    pub body: String,
    pub truncated: bool,
}

impl BriefedModel {
    /// `models` in order, whole while their bodies fit `budget` bytes in all.
    pub fn within(models: Vec<NamedBody>, budget: usize) -> Vec<Self> {
        let mut left = budget;
        models
            .into_iter()
            .map(|m| {
                let fits = m.body.len() <= left;
                if fits {
                    left -= m.body.len();
                }
                Self {
                    name: m.name,
                    body: if fits { m.body } else { String::new() },
                    truncated: !fits,
                }
            })
            .collect()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissionRecall {
    pub mission: String,
    pub artifacts: Vec<RecallHit>,
}

/// Start and resume answer the same shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionBriefing {
    pub session: Session,
    pub briefing: Briefing,
    pub slot: Option<SlotView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BindOutcome {
    pub session: Session,
    pub slot: SlotView,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionDetail {
    pub session: Session,
    pub idle: bool,
    pub ledger_size: i64,
}

/// Where the counts in answers stop: a session's ledger size, a project's
/// open agent sessions and open todos, an end's unattributed artifacts. Each
/// counts rows a client can add without bound, and a count that read them all
/// cost every start and end of the project in proportion; a count of this
/// many means this many or more. Every store counts up to it, and the
/// PostgreSQL functions and statements carry it as the literal `LIMIT 1000`.
pub const COUNTED_UP_TO: i64 = 1_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Unattributed {
    pub count: i64,
    pub ids: Vec<ArtifactId>,
}

/// The base focus and the slot list from rows of `(slot, focus)`, the base
/// (`slot` empty) among them when it was ever created; a slot name that no
/// longer parses is left out.
pub fn focus_and_slots(
    rows: impl Iterator<Item = Result<(String, Focus), StoreError>>,
) -> Result<(Focus, Vec<(SlotName, Revision)>), StoreError> {
    let mut base = Focus::empty();
    let mut slots = Vec::new();
    for row in rows {
        let (slot, focus) = row?;
        if slot.is_empty() {
            base = focus;
        } else if let Ok(name) = SlotName::parse(&slot) {
            slots.push((name, focus.revision));
        }
    }
    Ok((base, slots))
}

/// What a briefing reads besides its mission recall (SPEC §5), as a backend
/// fetches it in as few statements as it can.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BriefingSources {
    pub base: FocusRef,
    /// This client's newest other open agent session in the project:
    /// `(id, opened_at, last_activity_at, ledger size)`.
    pub previous_open: Option<(SessionId, DateTime<Utc>, DateTime<Utc>, i64)>,
    /// Bodies of documents that have been written (revision 1 or more).
    pub executive_state: Option<String>,
    pub sync_note: Option<String>,
    /// Mental models by name.
    pub mental_models: Vec<NamedBody>,
    pub brief: Option<crate::memory::Brief>,
    pub inbox_count: i64,
    pub open_sessions: i64,
    /// The last 5 closed agent sessions, newest first.
    pub recent_sessions: Vec<RecentSession>,
}

/// What a closing call loads in one go: the session and its target body, both
/// locked.
#[derive(Debug, Clone)]
pub struct LockedClose {
    pub session: crate::model::Session,
    pub close_record: Option<crate::rules::CloseRecord>,
    /// The base focus (unbound) or the bound slot's body.
    pub target: crate::model::Focus,
}

pub(crate) fn ser_time<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::model::rfc3339(t))
}

pub(crate) fn ser_opt_time<S: serde::Serializer>(
    t: &Option<DateTime<Utc>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&crate::model::rfc3339(t)),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod briefed_model_tests {
    use super::{BriefedModel, NamedBody};

    #[test]
    fn models_past_the_budget_go_by_name() {
        let m = |name: &str, len: usize| NamedBody {
            name: name.into(),
            body: "x".repeat(len),
        };
        let out = BriefedModel::within(vec![m("a", 6), m("b", 5), m("c", 4)], 10);
        let shown: Vec<_> = out
            .iter()
            .map(|b| (b.name.as_str(), b.body.len(), b.truncated))
            .collect();
        assert_eq!(shown, [("a", 6, false), ("b", 0, true), ("c", 4, false)]);
    }
}

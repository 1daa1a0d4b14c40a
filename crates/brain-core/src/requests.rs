//! What each mutating tool asks of a store, parsed and bounded by the server.
//!
//! Text fields are kept raw here: blank checks are step 4 of SPEC §2.4 and run
//! after the session checks (with a receipt), not at argument validation.

use crate::ids::{ClientKey, ProjectKey, SessionId, SlotName};
use crate::model::{ArtifactKind, Revision};
use crate::rules::Door;

/// SPEC §3.2 limits, checked at argument validation before anything is written.
pub mod limits {
    pub const FOCUS_MAX_BYTES: usize = 256 * 1024;
    pub const SUMMARY_MAX_BYTES: usize = 32 * 1024;
    pub const REASON_MAX_BYTES: usize = 4 * 1024;
    pub const ARTIFACT_TEXT_MAX_BYTES: usize = 16 * 1024;
    pub const TAGS_MAX: usize = 16;
    pub const TAG_MAX_CHARS: usize = 64;
    pub const CLIENT_KEY_MAX_CHARS: usize = 200;
}

#[derive(Debug, Clone)]
pub struct StartRequest {
    pub project: ProjectKey,
    pub client_key: ClientKey,
    pub slot: Option<SlotName>,
    pub digest: String,
}

#[derive(Debug, Clone)]
pub struct BindRequest {
    pub session_id: SessionId,
    pub expected_client_key: String,
    pub slot: SlotName,
    pub digest: String,
}

#[derive(Debug, Clone)]
pub struct ResumeRequest {
    pub session_id: SessionId,
    pub expected_client_key: String,
    /// Brain's tool, or a compatibility profile's (`rules::check_session`).
    pub door: Door,
}

/// `brain_session_end`, and the end half of `brain_session_relay`.
#[derive(Debug, Clone)]
pub struct EndRequest {
    pub session_id: SessionId,
    pub expected_client_key: String,
    pub summary: String,
    pub next_focus: String,
    pub expected_focus_revision: Revision,
    pub nothing_to_capture_reason: Option<String>,
    pub allow_focus_shrink: bool,
    pub dry_run: bool,
    /// Close without touching the focus: `next_focus` and
    /// `expected_focus_revision` are taken from the current body inside the
    /// transaction (outcome `unchanged`). For the compatibility profiles, whose
    /// seed tools have no focus; brain's own tools never set it.
    pub keep_focus: bool,
    /// Brain's tool, or a compatibility profile's (`rules::check_session`).
    pub door: Door,
    /// Digest of the canonical arguments without `dry_run`: the replay key.
    pub digest: String,
    /// `brain_session_end`'s `merge`, and how far it got.
    pub merge: MergeStep,
}

/// Where a merging end stands. The merge itself runs between transactions
/// (its CPU grows with the bodies): the close stops when it needs one, and
/// is called again with the merged body.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum MergeStep {
    /// Not asked for: a stale revision closes the session as conflicted.
    #[default]
    Off,
    /// Asked for: a stale revision stops the close with
    /// [`crate::error::StoreError::MergeNeeded`], writing nothing.
    Asked,
    /// The merged body, written if the session still ends on `target` (its
    /// bound slot, or the base focus) and that focus is still at `onto`;
    /// else the close stops again, to merge onto what it finds.
    Onto {
        base_revision: Revision,
        onto: Revision,
        target: Option<crate::ids::SlotName>,
        text: String,
    },
    /// The merge did not come out clean: the close goes on as an end without
    /// merge (conflicted on a stale revision), answering `note` as `merge`.
    Failed(serde_json::Value),
}

#[derive(Debug, Clone)]
pub struct RelayRequest {
    pub end: EndRequest,
    pub to_client_key: String,
}

#[derive(Debug, Clone)]
pub struct AbandonRequest {
    pub session_id: SessionId,
    pub expected_client_key: String,
    pub reason: String,
    pub confirm: bool,
    pub dry_run: bool,
    pub digest: String,
}

#[derive(Debug, Clone)]
pub struct RememberRequest {
    pub project: ProjectKey,
    pub kind: ArtifactKind,
    pub text: String,
    pub tags: Vec<String>,
    pub session: Option<(SessionId, String)>,
    pub digest: String,
}

/// Whether the caller may set `allow_focus_shrink` (SPEC §2.4 step 5), as the
/// front door resolved it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OverrideGrant {
    /// An active elevation for this credential on this connection (or brain session).
    pub elevation_active: bool,
}

/// `brain_todo_ack`: 1–50 artifact ids of one project, and an optional note.
#[derive(Debug, Clone)]
pub struct TodoAckRequest {
    pub project: ProjectKey,
    pub artifact_ids: Vec<crate::ids::ArtifactId>,
    pub note: Option<String>,
    pub digest: String,
}

/// What `brain_todo_ack` did with each id.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TodoAckOutcome {
    /// Acknowledged by this call.
    pub acknowledged: Vec<crate::ids::ArtifactId>,
    /// Todos acknowledged before; left as they were.
    pub already_acknowledged: Vec<crate::ids::ArtifactId>,
    /// Not a todo of this project (another kind, another project, or unknown).
    pub not_todos: Vec<crate::ids::ArtifactId>,
    /// The project's unacknowledged todos after the call.
    pub inbox_count: i64,
}

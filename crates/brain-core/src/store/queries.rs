//! The filters and pages of recall, session and receipt lists.

use chrono::{DateTime, Utc};

use crate::ids::{ClientKey, ProjectKey, SessionId, SlotName};
use crate::model::{ArtifactKind, SessionStatus};

/// How many artifacts past its cursor a recall looks through, newest first:
/// a listing (no query) with a filter (kinds, tags, inbox, session) before
/// the filter, since the filters are not in the project's index (a listing
/// whose filter matched little read the whole project, 89 ms at 130,000
/// artifacts); and every search, whose ranking takes only the matches among
/// them (ranking every match of a common word took 320 ms in PostgreSQL and
/// 1.6 s in SQLite at 130,000). A page short of its limit names the next
/// cursor while the project goes on past the window. The SQL stores carry
/// it as the literal `LIMIT 10000`.
pub const LISTING_WINDOW: i64 = 10_000;

/// How much text a search's window holds at most: the newest artifacts past
/// its cursor until their texts pass this many bytes (the one that passes it
/// included, so a window is never empty), within LISTING_WINDOW. Ranking and
/// marking cost in proportion to the text, and 10,000 artifacts of 16 KiB
/// took 0.4 s in PostgreSQL and 8 s in SQLite.
pub const SEARCH_WINDOW_BYTES: i64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct RecallQuery {
    pub project: ProjectKey,
    /// Web-search syntax; `None` lists the matching artifacts newest first.
    pub query: Option<String>,
    /// Only todos not yet acknowledged (the briefing's inbox).
    pub inbox: bool,
    /// Only this session's ledger.
    pub session_id: Option<crate::ids::SessionId>,
    /// Only artifacts older than this `(created_at, artifact_id)`: for a
    /// listing the previous page's last (a keyset, so acknowledging the todos
    /// of one page does not skip any of the next); for a search, where its
    /// window starts (the previous window's last).
    pub before: Option<(DateTime<Utc>, crate::ids::ArtifactId)>,
    pub kinds: Vec<ArtifactKind>,
    /// Only artifacts carrying every one of these tags (none: no filter).
    pub tags: Vec<String>,
    pub limit: i64,
    pub offset: i64,
}

impl RecallQuery {
    /// Whether any filter applies besides the project (a listing with one
    /// looks through LISTING_WINDOW artifacts at most).
    pub fn filtered(&self) -> bool {
        !self.kinds.is_empty() || !self.tags.is_empty() || self.inbox || self.session_id.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct SessionListQuery {
    pub project: ProjectKey,
    pub status: Option<SessionStatus>,
    /// Only sessions bound to this slot.
    pub slot: Option<SlotName>,
    /// Only sessions opened for this client key.
    pub client_key: Option<ClientKey>,
    /// `(opened_at, session_id)` of the last row of the previous page.
    pub after: Option<(DateTime<Utc>, SessionId)>,
    /// Only sessions at or after this `(opened_at, session_id)`: a filtered
    /// page's window, read before the page so both see the same window.
    pub from: Option<(DateTime<Utc>, SessionId)>,
    pub limit: i64,
}

impl SessionListQuery {
    /// Whether a filter applies within the window (`slot`, `client_key`):
    /// a page may then fall short of its limit while the project goes on.
    pub fn filtered(&self) -> bool {
        self.slot.is_some() || self.client_key.is_some()
    }
}

#[derive(Debug, Clone)]
pub struct ReceiptQuery {
    pub project: Option<ProjectKey>,
    pub session_id: Option<SessionId>,
    pub after_seq: i64,
    /// `Some`: only `seq` below this, newest first.
    pub before_seq: Option<i64>,
    /// `Some`: only `seq` at or below this, in either order (a page's window
    /// of the chain, so a filter that matches little reads a bounded part).
    pub until_seq: Option<i64>,
    pub limit: i64,
}

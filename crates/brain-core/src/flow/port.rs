//! The write port: one open write transaction of a store ([`WriteTx`]), in
//! brain's own types. A flow loads through it, asks [`crate::rules`] to
//! decide, and applies the decision with one of its writes; the store
//! chooses how each operation reaches its data (a statement, a fused
//! statement, a map in memory).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::StoreError;
use crate::ids::{ArtifactId, ElevationId, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{Document, DocumentKind};
use crate::model::{Artifact, ArtifactKind, Caller, Focus, Revision, Session};
use crate::operators::{ConnectionOwner, Elevation};
use crate::receipt::ReceiptDraft;
use crate::rules::CloseRecord;
use crate::store::{BriefingSources, LockedClose, Unattributed};

/// A write of a session's target body: the new body as `revision`.
#[derive(Debug, Clone, Copy)]
pub struct FocusWrite<'a> {
    pub session: &'a Session,
    pub body: &'a str,
    pub revision: Revision,
    pub at: DateTime<Utc>,
}

/// Everything an end, relay or abandon writes, in one operation: the
/// closed session with its stored answer, the target body when the close
/// applied, a relay's new session, and the call's receipt (which names the
/// body's history row).
#[derive(Debug, Clone)]
pub struct CloseWrite<'a> {
    pub session: &'a Session,
    pub focus: Option<FocusWrite<'a>>,
    /// A relay's session for its receiver.
    pub next_session: Option<&'a Session>,
    /// How the closed session's `next_focus` is stored ([`StoredNextFocus::of`]).
    pub next_focus: StoredNextFocus<'a>,
    pub digest: &'a str,
    /// The closing call's answer, stored so that a replay answers it again.
    pub result: &'a Value,
    pub receipt: ReceiptDraft,
}

/// How a closed session's `next_focus` is stored: once. When it is exactly
/// a body the focus's history holds (the body the close wrote, or, when the
/// close left the focus as it found it, the body found at a revision above
/// 0), the session names that history row's revision (`revision`, with
/// `text` None); otherwise (a merge, a conflict's proposal, no body) the
/// session keeps the text itself. A store's reads give the text back either
/// way. An end that leaves the focus unchanged so stores no new text: past
/// the tenant's storage quota it still closes (see the sessions' usage
/// trigger in the stores' functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredNextFocus<'a> {
    pub text: Option<&'a str>,
    pub revision: Option<Revision>,
}

impl<'a> StoredNextFocus<'a> {
    /// `written`: the body the close writes; `found`: the target body as the
    /// close found it (None for an abandon).
    pub fn of(
        session: &'a Session,
        written: Option<&FocusWrite<'_>>,
        found: Option<&Focus>,
    ) -> Self {
        let by_revision = |revision| Self {
            text: None,
            revision: Some(revision),
        };
        match (session.next_focus.as_deref(), written, found) {
            (Some(text), Some(w), _) if w.body == text => by_revision(w.revision),
            (Some(text), None, Some(f)) if f.revision > 0 && f.body == text => {
                by_revision(f.revision)
            }
            (text, _, _) => Self {
                text,
                revision: None,
            },
        }
    }
}

/// What a close reads without locks, for a write in one call
/// ([`WriteTx::close_in_one_call`]): the session and its target body (None:
/// no such session), what its answer counts, as of `until`, and the base
/// focus's revision, which a relay's receiver starts on.
#[derive(Debug, Clone)]
pub struct PeekedClose {
    pub loaded: Option<LockedClose>,
    pub unattributed: Unattributed,
    /// The project's open agent sessions, this one included.
    pub open_agents: i64,
    pub base_revision: Revision,
}

/// What an end or relay in one call ([`WriteTx::close_in_one_call`]) was decided
/// and answered on, which its write holds still: the target body's revision
/// read (`found`), and its answer's counts as of `until`.
#[derive(Debug, Clone, Copy)]
pub struct DecidedOn<'a> {
    pub found: Revision,
    pub until: DateTime<Utc>,
    pub unattributed: &'a Unattributed,
    /// The project's open agent sessions, this one included.
    pub open_agents: i64,
}

/// An MCP connection's record and its tracer session, written together.
#[derive(Debug, Clone)]
pub struct NewConnection<'a> {
    pub connection_id: &'a str,
    /// The client's initialize parameters, for restoring it on another replica.
    pub init_params: Option<Value>,
    pub tracer: &'a Session,
    pub at: DateTime<Utc>,
}

/// What [`WriteTx::lock_document`] holds: the document (one never written
/// reads as empty at revision 0) and, when asked, the project's mental
/// models counted with the project claimed against other new models.
#[derive(Debug, Clone)]
pub struct DocumentLock {
    pub current: Document,
    pub mental_models: Option<i64>,
}

/// A receipt for [`WriteTx::commit`]: whose call it records, and what.
pub type Receipting<'a> = (&'a Caller, ReceiptDraft);

/// One open write transaction, bound to one tenant when the store opened
/// it: every operation reads and writes that tenant's rows only, so none
/// takes a tenant. Dropping it rolls back.
///
/// Loads lock what a decision compares, in one order (session, then target
/// body, then the tenant's ledger tip at the commit), so concurrent writers
/// of one session or body serialize on the first lock they share.
#[async_trait]
pub trait WriteTx: Send + Sized {
    /// The tenant this transaction was opened for.
    fn tenant(&self) -> &TenantId;

    // Loads.

    /// The session with its stored close, locked for the rest of the transaction.
    async fn lock_session(
        &mut self,
        id: SessionId,
    ) -> Result<Option<(Session, Option<CloseRecord>)>, StoreError>;
    /// For a closing call: the session and its target body, both locked.
    async fn lock_close(&mut self, id: SessionId) -> Result<Option<LockedClose>, StoreError>;
    /// The base focus (`slot` None) or a slot body as it stands, unlocked;
    /// one never written reads as empty at revision 0.
    async fn focus(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError>;
    /// The body of the base focus or a slot at `revision` (at least 1), from
    /// its history; `None` when the history no longer holds it. Revision 0
    /// is the empty body, and never asked for ([`super::close`]'s `body_at`).
    async fn focus_body_at(
        &mut self,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        revision: Revision,
    ) -> Result<Option<String>, StoreError>;
    /// A close's loads and counts ([`WriteTx::lock_close`],
    /// [`WriteTx::close_counts`]) read without locks and without beginning
    /// this transaction, for a store that can write a close in one call;
    /// `None` (the default) for one that cannot: every close locks first.
    async fn peek_close(
        &mut self,
        _id: SessionId,
        _until: DateTime<Utc>,
    ) -> Result<Option<PeekedClose>, StoreError> {
        Ok(None)
    }
    /// An end or relay decided on [`WriteTx::peek_close`]'s read, written
    /// and committed in one call (with a relay's new session, when it opens
    /// one), only if all it was decided on is still so: the
    /// session open and bound as read, its target body at `on.found`, and,
    /// counted once both are held, the answer's counts as read (the ends on
    /// one focus serialize there, and each counts the sessions the earlier
    /// ones left open). `false` when anything moved or another writer holds
    /// the rows: then nothing was written and this transaction is as it
    /// was, to close with locks.
    async fn close_in_one_call(
        &mut self,
        _caller: &Caller,
        _w: CloseWrite<'_>,
        _on: DecidedOn<'_>,
    ) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// What a close's answer counts, read after its locks are held: the
    /// project's artifacts of no session created from the session's opening
    /// to `until`, and its open agent sessions, this one included.
    async fn close_counts(
        &mut self,
        session: &Session,
        until: DateTime<Utc>,
    ) -> Result<(Unattributed, i64), StoreError>;
    /// Whether an elevation of the caller's credential, unexpired and not
    /// revoked, covers `session` (or the caller's MCP connection).
    async fn elevation_active(
        &mut self,
        caller: &Caller,
        session: SessionId,
    ) -> Result<bool, StoreError>;
    /// Everything the briefing (SPEC §5) reads but its mission recall.
    async fn briefing_sources(&mut self, session: &Session) -> Result<BriefingSources, StoreError>;
    /// Of `ids`, those that are artifacts of the project, locked: `(id,
    /// kind, acknowledged)`.
    async fn lock_todos(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
    ) -> Result<Vec<(ArtifactId, ArtifactKind, bool)>, StoreError>;
    /// A project document, locked. With `count_models`, the project is
    /// claimed first against other writers of new mental models and its
    /// models counted, then the document locked again.
    async fn lock_document(
        &mut self,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
        count_models: bool,
    ) -> Result<DocumentLock, StoreError>;
    /// The tenant's MCP connection an elevation would name, if it exists.
    async fn connection_owner(
        &mut self,
        connection_id: &str,
    ) -> Result<Option<ConnectionOwner>, StoreError>;
    /// Claim the tenant against other new connections, and count its open
    /// connections last seen after `since`: `(the caller's credential with
    /// its role, the whole tenant)`.
    async fn claim_connection_counts(
        &mut self,
        caller: &Caller,
        since: DateTime<Utc>,
    ) -> Result<(i64, i64), StoreError>;

    // Writes.

    /// Create the tenant with its ledger tip and, when given, the project
    /// with its empty base focus, on first use.
    async fn provision(&mut self, project: Option<&ProjectKey>) -> Result<(), StoreError>;
    /// A start's writes and reads: create its project and bound slot on
    /// first use, set `started_focus_revision` and `read_revision`, insert
    /// the session, read its briefing's sources, append the receipt. The
    /// bound slot's body when it has one.
    async fn open_session(
        &mut self,
        caller: &Caller,
        session: &mut Session,
        receipt: ReceiptDraft,
    ) -> Result<(Option<Focus>, BriefingSources), StoreError>;
    /// Mark the session active at `now`. With `bind`, also create the slot
    /// on first use, read it, and bind the session to it at the revision
    /// read: the slot as read.
    async fn touch_session(
        &mut self,
        id: SessionId,
        now: DateTime<Utc>,
        bind: Option<(&ProjectKey, &SlotName)>,
    ) -> Result<Option<Focus>, StoreError>;
    /// A remember's writes: its project when missing, the artifact, its receipt.
    async fn remember(
        &mut self,
        caller: &Caller,
        artifact: &Artifact,
        receipt: ReceiptDraft,
    ) -> Result<(), StoreError>;
    /// Mark these todos of the project acknowledged at `at`, with the note;
    /// the project's inbox count after.
    async fn acknowledge(
        &mut self,
        project: &ProjectKey,
        ids: &[ArtifactId],
        note: Option<&str>,
        at: DateTime<Utc>,
    ) -> Result<i64, StoreError>;
    /// Insert or replace a project document; whether it was written (not
    /// when another writer created or moved it since it was read: a
    /// document that did not exist had no row to lock).
    async fn write_document(
        &mut self,
        project: &ProjectKey,
        doc: &Document,
    ) -> Result<bool, StoreError>;
    /// An end's, relay's or abandon's writes ([`CloseWrite`]).
    async fn apply_close(&mut self, caller: &Caller, w: CloseWrite<'_>) -> Result<(), StoreError>;
    async fn grant_elevation(&mut self, caller: &Caller, e: &Elevation) -> Result<(), StoreError>;
    /// Revoke one of the caller's credential's elevations at `at` (one
    /// revoked before keeps its first time); `None` if it has no such one.
    async fn revoke_elevation(
        &mut self,
        caller: &Caller,
        id: ElevationId,
        at: DateTime<Utc>,
    ) -> Result<Option<Elevation>, StoreError>;
    /// Record an MCP connection and its tracer session.
    async fn open_connection(
        &mut self,
        caller: &Caller,
        c: NewConnection<'_>,
    ) -> Result<(), StoreError>;
    /// Remove the project and everything of it but its receipts; whether it
    /// existed.
    async fn delete_project(&mut self, project: &ProjectKey) -> Result<bool, StoreError>;

    // Ends.

    /// Commit, appending `receipt` after the tenant's tip first.
    async fn commit(self, receipt: Option<Receipting<'_>>) -> Result<(), StoreError>;
    /// End a transaction whose answer wrote nothing but rests on what it read
    /// (a replay, a dry run): its writes, if any, are undone. A store whose
    /// transactions may read writes not yet committed (SQLite's group commit)
    /// returns once those are durable, so no answer rests on a write that is
    /// then lost.
    async fn finish_read(self) -> Result<(), StoreError>;
}

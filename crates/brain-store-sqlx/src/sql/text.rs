//! The statements a store writes in its dialect. Each field's comment gives
//! its parameters in order (`$1`, `$2`, … or `?1`, `?2`, …) and the columns
//! it returns; [`super::ops`] binds and reads them.

/// One store's statement texts.
#[derive(Debug)]
pub struct Sql {
    /// tenant, credential_id, now, connection_id, session_id → `found`: the
    /// credential holds a live elevation for the connection or, with no
    /// connection, for the session.
    pub elevation_active: &'static str,
    /// tenant, connection_id → credential_id, role, closed.
    pub connection_owner: &'static str,
    /// tenant, elevation_id, credential_id, subject, connection_id,
    /// session_id, reason, granted_at, expires_at.
    pub elevation_insert: &'static str,
    /// tenant, elevation_id, credential_id, at → the elevation's columns;
    /// keeps an earlier `revoked_at`.
    pub elevation_revoke: &'static str,
    /// tenant, credential_id, now → live elevations' columns, oldest first.
    pub elevation_list: &'static str,
    /// tenant, token_id, name, token_hash, created_at; inserts nothing when
    /// the name is live in the tenant.
    pub token_insert: &'static str,
    /// tenant, name, now → the revoked token's columns.
    pub token_revoke: &'static str,
    /// tenant → the tenant's tokens' columns, oldest first.
    pub token_list: &'static str,
    /// token_hash → tenant_id and the live token's columns.
    pub token_find: &'static str,
    /// → `found`: any live token in any tenant.
    pub token_exists: &'static str,

    /// tenant, connection_id, credential_kind, credential_id, at (opened
    /// and last seen), init_params, tracer_session_id, role.
    pub connection_insert: &'static str,
    /// tenant, connection_id → credential_kind, credential_id, role,
    /// closed_at, last_seen_at, init_params, tracer_session_id.
    pub connection_get: &'static str,
    /// tenant, connection_id, now: last seen now, unless closed.
    pub connection_touch: &'static str,
    /// tenant, connection_id, now → tracer_session_id; keeps an earlier
    /// `closed_at`.
    pub connection_close: &'static str,
    /// tenant, connection_id, now: revoke the connection's elevations, in the
    /// close's transaction (on PostgreSQL this waits for a write that is
    /// using one: `elevation_active` holds it `FOR SHARE`).
    pub connection_elevations_end: &'static str,
    /// tenant, session_id, now: end an open tracer session.
    pub tracer_close: &'static str,
    /// tenant, credential_kind, credential_id, seen_since, role → `mine` (open
    /// connections of this credential and role seen since), `total` (the
    /// tenant's).
    pub connection_open_count: &'static str,
    /// tenant: claim the tenant's row against every other writer that claims
    /// it (not against the foreign-key checks of everyday writes).
    pub tenant_claim: &'static str,
    /// now, seen_before → tenant_id, connection_id, tracer_session_id of every
    /// open connection last seen at or before, closed now (all tenants).
    pub connection_expire: &'static str,
    /// tenant, connection_id → session_id: the newer of the connection's
    /// newest successful `brain_session_start` receipt among the tenant's
    /// 10,000 newest receipts (the chain's index holds no connection: an
    /// unbounded walk read the whole chain) and the session a profile's start
    /// recorded on the connection (`connection_started`).
    pub session_started_on: &'static str,
    /// tenant, connection_id, session_id, now: the session a profile's start
    /// opened or resumed on the open connection, and when.
    pub connection_started: &'static str,
    /// now, runtime project, active_before: abandon open agent sessions of the
    /// project idle since (all tenants).
    pub runtime_expire: &'static str,

    /// tenant, session_id → the session's columns.
    pub session_get: &'static str,
    /// As `session_get`, locking the row for the transaction.
    pub session_lock: &'static str,
    /// tenant, project, slot ('' for the base) → body, revision, updated_at,
    /// updated_by_session.
    pub focus_get: &'static str,
    /// As `focus_get`, locking the row for the transaction.
    pub focus_lock: &'static str,
    /// tenant, session_id, project, client_key, kind, bound_slot,
    /// started_focus_revision, status, opened_at, last_activity_at,
    /// opened_by_kind, opened_by_subject, opened_by_role, opened_by_credential.
    pub session_insert: &'static str,
    /// tenant, session_id → `n`: the session's artifacts.
    pub ledger_size: &'static str,
    /// tenant, project → `n`: the project's open agent sessions.
    pub open_agent_sessions: &'static str,
    /// tenant, project → `n`: the project's unacknowledged todos.
    pub inbox_count: &'static str,
    /// tenant, session_id, slot, now: bind the session and mark it active.
    pub session_bind: &'static str,
    /// tenant, session_id, now: mark the session active.
    pub session_touch: &'static str,
    /// tenant, project, slot: create the slot's empty body when missing.
    pub slot_ensure: &'static str,
    /// tenant, project, kind, name → kind, name, body, revision, updated_at,
    /// updated_by.
    pub document_get: &'static str,
    /// As `document_get`, locking the row for the transaction.
    pub document_lock: &'static str,
    /// tenant, project: claim the project row against every other writer
    /// that claims it (not against the foreign-key checks of everyday
    /// writes), so that counting what it holds and adding to it are one step.
    pub project_claim: &'static str,
    /// tenant, project → n, the mental models written to it.
    pub mental_model_count: &'static str,
    /// tenant, project, kind, name, body, revision, updated_at, updated_by:
    /// insert, or replace the row at revision - 1. A row another writer
    /// created or moved meanwhile is left alone: no row is written.
    pub document_write: &'static str,
    /// tenant, project, slot, before_revision, limit → revision, body,
    /// session_id, receipt_seq, created_at, newest first.
    pub focus_history: &'static str,
    /// tenant, project, status or NULL, after_opened_at or NULL,
    /// after_session_id, limit, slot or NULL, client_key or NULL,
    /// from_opened_at or NULL, from_session_id (at or after) → the agent
    /// sessions' columns and `ledger_size`, newest first, read as far as the
    /// page needs (used without slot and client_key).
    pub session_list: &'static str,
    /// As `session_list`, slot and client_key filtering within the window:
    /// from its end (read first by `session_list_window_end`) to the cursor,
    /// at most 20,000 sessions read.
    pub session_list_window: &'static str,
    /// tenant, project, status or NULL, after_opened_at or NULL,
    /// after_session_id → `opened_at`, `session_id` of the window's oldest
    /// session, only when the window holds brain_core::store::LISTING_WINDOW.
    pub session_list_window_end: &'static str,
    /// tenant, after_seq, project or NULL, session_id or NULL, limit,
    /// before_seq (NULL) → receipt columns, oldest first.
    pub receipts_page: &'static str,
    /// As `receipts_page` with before_seq set, newest first.
    pub receipts_page_newest_first: &'static str,
    /// tenant → every receipt's columns in `seq` order.
    pub receipts_all: &'static str,
    /// tenant, session_id, limit → the session's artifacts' columns, oldest
    /// first.
    pub session_ledger: &'static str,

    /// since, day ('YYYY-MM-DD') → tenant_id, project of every project
    /// with agent sessions active or artifacts created since and no brief
    /// for the day (all tenants).
    pub briefs_due: &'static str,
    /// tenant, project, day ('YYYY-MM-DD'), body, generated_at; nothing when
    /// the day has its brief.
    pub brief_insert: &'static str,
    /// tenant, project, since, limit → status, summary (its first 200
    /// characters) of the last `limit` agent sessions ended since, oldest
    /// first, and n, how many ended since in all.
    pub activity_closed: &'static str,
    /// tenant, project, since, limit → slot, revision of the last `limit`
    /// focus writes since, oldest first, and n, how many in all.
    pub activity_focus: &'static str,
    /// tenant, project, since → kind, `n`: artifacts created since by kind.
    pub activity_kinds: &'static str,

    /// tenant, search or NULL (a substring of the name), idle_before, limit,
    /// the two server projects (left out) → project, base_revision,
    /// open_sessions, idle_sessions (open agent sessions active before
    /// idle_before), last_active_micros (the newest agent activity, as
    /// microseconds since the epoch); by name.
    pub projects: &'static str,
    /// tenant, credential_id → connection_id of the credential's open
    /// operator connections, newest first, at most 50.
    pub operator_connections: &'static str,
    /// tenant, credential_id → session_id, project of the open agent sessions
    /// the credential opened as operator, newest first, at most 50.
    pub operator_sessions: &'static str,
    /// tenant, project → name of its mental models, by name, at most 200.
    pub mental_model_names: &'static str,
    /// tenant, the two server projects (left out), after_project,
    /// after_slot, limit → project, slot, revision of focus bodies after
    /// (after_project, after_slot), in that order.
    pub focus_resources: &'static str,
    /// tenant, project → slot, body (the base's only; '' for a slot),
    /// revision, updated_at, updated_by_session of the base focus ('' sorts
    /// first) and at most 200 slots. Runs outside any tenant scope: the
    /// statement itself must keep to the tenant.
    pub focus_with_slots: &'static str,
    /// tenant, project, seconds → `trusted_ms`: marks the project's focus
    /// rows so that their changes are announced to every replica's focus
    /// memory for the seconds given, before a read whose answer is to be
    /// remembered; the milliseconds from the call on for which the answer
    /// may be kept, or NULL when it must not be. None where the store keeps
    /// no focus memory (SQLite).
    pub focus_watch: Option<&'static str>,
    /// tenant, project, slot ('' for the base) → a row when the body exists.
    pub focus_exists: &'static str,
    /// tenant, project, search terms, kinds (none: all), limit, offset, tags
    /// (each required), inbox (only open todos), session_id or NULL,
    /// before_created_at or NULL, before_artifact_id, the window's bytes →
    /// the artifacts' columns of the matches in the window past `before`:
    /// with `rank` (relative to the best match in the window, NULL when that
    /// is 0), best first, the page at limit and offset, when
    /// `recall_search_ranks`; else every artifact of the window the filters
    /// keep, unordered, for the caller to match, rank and page (the terms
    /// unused).
    pub recall_search: &'static str,
    /// Whether `recall_search` matches, ranks and pages itself. SQLite's
    /// does not: it has no full-text index (migration 0028), and brain
    /// matches the window's texts itself (`brain_store_sqlx::sql::recall`).
    pub recall_search_ranks: bool,
    /// The same first nine parameters (terms bound empty), then
    /// before_created_at or NULL and before_artifact_id → the artifacts'
    /// columns, newest first.
    pub recall_list: &'static str,
    /// As `recall_list`, its filters within brain_core::store::LISTING_WINDOW.
    pub recall_list_window: &'static str,
    /// tenant, project, before_created_at or NULL, before_artifact_id, the
    /// window's bytes or NULL (a listing's) → `created_at`, `artifact_id` of
    /// the window's oldest artifact, only when the project goes on past it.
    pub recall_window_end: &'static str,
    /// → a row: the database answers.
    pub ping: &'static str,
    /// → open_sessions (agent, all tenants), open_connections,
    /// tenants_near_quota (at 80 % of the quota or more), largest_usage,
    /// quota_bytes.
    pub gauges: &'static str,
    /// tenant → bytes (0 for a tenant that holds none), quota_bytes.
    pub tenant_usage: &'static str,
    /// Each of these in order, with tenant, project: remove the project's
    /// rows, children first; the last removes the project itself.
    pub project_delete: &'static [&'static str],
    /// Each of these in order, with tenant: remove every row of the tenant;
    /// the last removes the tenant itself.
    pub tenant_delete: &'static [&'static str],
    /// How a statement names its n-th parameter: this before n.
    pub placeholder: &'static str,
    /// After a text expression: compare it bytewise.
    pub collate_binary: &'static str,
    /// A calendar day's parameter (`{}`, given as `YYYY-MM-DD` text).
    pub date_param: &'static str,
    /// bytes → (no rows): the tenant quota every write is held to.
    pub set_tenant_quota: &'static str,
    /// tenant → a row when the tenant exists.
    pub tenant_get: &'static str,
    /// tenant → `what` of at most one row that names a focus revision the
    /// tenant's history does not hold: a focus row whose body is its history
    /// row, a session's `next_focus_revision`, a stored close answer left
    /// without the body it ended on (an import checks its rows with it). Each
    /// lookup is by the history's whole primary key (a revision compared as
    /// another type than bigint would read every revision of the focus, for
    /// each session).
    pub import_dangling: &'static str,
    /// tenant → seq, hash of the tenant's ledger tip.
    pub ledger_tip: &'static str,

    // Writes both stores run (`super::writes`); those only the portable forms
    // run are in [`PortableWrites`].
    /// Each of these in order, with tenant, genesis_hash, now: create the
    /// tenant and its ledger tip when missing.
    pub tenant_ensure: &'static [&'static str],
    /// tenant, session_id, status, ended_at, last_activity_at, summary,
    /// next_focus, nothing_to_capture_reason, focus_outcome, abandon_reason,
    /// close_digest, close_result, next_focus_revision (next_focus and its
    /// revision as brain_core::flow::StoredNextFocus stores them).
    pub session_close: &'static str,
    /// The texts of the writes only the portable forms of [`super::SqlTx`]
    /// run (SQLite's); `None` for a store that runs its own form of each
    /// (PostgreSQL's functions and fused statements), which then has no
    /// second form of them to keep.
    pub portable: Option<&'static PortableWrites>,
}

/// What a statement starts with when it must be planned with its
/// parameters' values on every call ([`PLANNED_PER_CALL`]).
#[macro_export]
macro_rules! planned_per_call {
    () => {
        "/* planned per call */ "
    };
}

/// The mark of a statement whose plan depends on its parameters' values:
/// a cursor or filter bound NULL or not (`$n IS NULL OR …`), which a cached
/// generic plan (PostgreSQL's choice after five runs) turns from an index
/// bound into a filter over every row, and a window into a read of the
/// whole project or chain. Such a statement is sent unnamed, so PostgreSQL
/// plans it for each call's values (a parse and a plan per call, on reads
/// that are not the write path's).
pub const PLANNED_PER_CALL: &str = planned_per_call!();

/// The columns of an elevation, for a store's statements.
#[macro_export]
macro_rules! elevation_columns {
    () => {
        "elevation_id, subject, connection_id, session_id, reason, granted_at, expires_at, revoked_at"
    };
}

/// The columns of a shared token, for a store's statements.
#[macro_export]
macro_rules! token_columns {
    () => {
        "token_id, name, created_at, revoked_at"
    };
}
/// The columns of a session, for a store's statements, over the sessions
/// row `s`. A session whose `next_focus` its close wrote as the target body
/// stores it once, in that body's history row, and names the row's revision
/// (`next_focus_revision`, brain_core::flow::StoredNextFocus): its text is
/// read from there.
#[macro_export]
macro_rules! session_columns {
    () => {
        "session_id, project, client_key, kind, bound_slot, started_focus_revision, \
         read_revision, relayed_from, status, \
         opened_at, last_activity_at, ended_at, summary, \
         CASE WHEN s.next_focus_revision IS NULL THEN s.next_focus ELSE \
         (SELECT h.body FROM focus_history h WHERE h.tenant_id = s.tenant_id \
          AND h.project = s.project AND h.slot = COALESCE(s.bound_slot, '') \
          AND h.revision = s.next_focus_revision) END AS next_focus, nothing_to_capture_reason, \
         focus_outcome, abandon_reason, opened_by_kind, opened_by_subject, opened_by_role, \
         opened_by_credential, close_digest, close_result"
    };
}

/// The body of the focus row `f`, for a store's statements. A close writes
/// a body once, as the history row of its revision; the focus row names the
/// revision and holds no text (NULL on PostgreSQL, '' on SQLite, whose
/// column cannot drop NOT NULL). The history row of the row's revision is
/// read first: a copy the row still holds (written by an older build, or
/// imported) is the same text. Only a row no history row answers for, at
/// revision 0, is read from itself. PostgreSQL's functions read it with the
/// same expression (migrations/postgres/functions.sql).
#[macro_export]
macro_rules! focus_body {
    ($f:literal) => {
        concat!(
            "COALESCE((SELECT h.body FROM focus_history h WHERE h.tenant_id = ",
            $f,
            ".tenant_id AND h.project = ",
            $f,
            ".project AND h.slot = ",
            $f,
            ".slot AND h.revision = ",
            $f,
            ".revision), ",
            $f,
            ".body)"
        )
    };
}

/// The columns of a receipt, for a store's statements.
#[macro_export]
macro_rules! receipt_columns {
    () => {
        "tenant_id, seq, receipt_id, at, tool, project, session_id, credential_kind, subject, \
         token_id, connection_id, elevated, outcome, request_digest, prev_hash, hash"
    };
}

/// The columns of an artifact, for a store's statements.
#[macro_export]
macro_rules! artifact_columns {
    () => {
        "artifact_id, project, session_id, kind, text, tags, created_at, acknowledged_at, ack_note"
    };
    // Qualified by the alias `a`, for a join.
    (a) => {
        "a.artifact_id, a.project, a.session_id, a.kind, a.text, a.tags, a.created_at, \
         a.acknowledged_at, a.ack_note"
    };
}

/// The statements of the portable writes that a store with forms of its own
/// never runs ([`Sql::portable`]).
#[derive(Debug)]
pub struct PortableWrites {
    /// tenant, project, now: create the project when missing.
    pub project_insert: &'static str,
    /// tenant → seq, hash of the tenant's ledger tip, locked for the
    /// transaction.
    pub ledger_tip_lock: &'static str,
    /// tenant, seq, receipt_id, at, tool, project, session_id,
    /// credential_kind, subject, token_id, connection_id, elevated, outcome,
    /// request_digest, prev_hash, hash.
    pub receipt_insert: &'static str,
    /// tenant, seq, hash: move the ledger tip.
    pub ledger_tip_set: &'static str,
    /// tenant, project, slot, revision, body, session_id, receipt_seq,
    /// created_at.
    pub history_insert: &'static str,
    /// tenant, project, slot, revision, updated_at, updated_by_session: the
    /// focus row names its new revision, whose body is the history row
    /// `history_insert` writes in the same transaction (`focus_body!`).
    pub focus_write: &'static str,
    /// tenant, artifact_id, project, session_id, kind, text, tags, created_at.
    pub artifact_insert: &'static str,
    /// tenant, project, from, until → artifact_id and `n` (all of them) of
    /// the project's artifacts of no session created in [from, until], the
    /// first 20 by creation.
    pub unattributed: &'static str,
    /// tenant, project, artifact_id → kind, `acknowledged`.
    pub artifact_state: &'static str,
    /// tenant, project, artifact_id, at, note: acknowledge an open todo.
    pub acknowledge: &'static str,
    /// tenant, project, client_key, session_id → session_id, opened_at,
    /// last_activity_at of the client's newest other open agent session.
    pub previous_open: &'static str,
    /// tenant, project → the project's mental models as documents, by name.
    pub mental_models: &'static str,
    /// tenant, project → body, generated_at of the newest daily brief.
    pub latest_brief: &'static str,
    /// tenant, project → session_id, status, summary, ended_at of the five
    /// newest closed agent sessions.
    pub recent_closed: &'static str,
}

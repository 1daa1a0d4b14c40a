//! The `Store` trait a server holds (its parts: the session calls of
//! [`crate::writes::SessionWrites`], the reads, the operators' reads, the
//! lifecycle, export and import), with what each part answers.
//!
//! - [`answers`]: what the session calls and reads answer (the briefing,
//!   sessions, focus and slot views).
//! - [`operator_views`]: what operators read (projects, gauges, usage) and
//!   the connection registry's record.
//! - [`queries`]: the filters and pages of recall, session and receipt lists.
//! - [`verify`]: checking a tenant's receipt chain a page at a time.

mod answers;
mod operator_views;
mod queries;
mod verify;

pub use crate::error::StoreError;
pub use answers::*;
pub(crate) use answers::{ser_opt_time, ser_time};
pub use operator_views::*;
pub use queries::*;
pub use verify::*;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::ids::{ArtifactId, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{Document, DocumentKind, HistoryEntry, RecallHit};
use crate::model::{Artifact, Caller, CredentialKind, Focus, Revision, Role};
use crate::operators::{Elevation, SharedToken};
use crate::receipt::Receipt;

/// Settings every backend honours.
#[derive(Debug, Clone, Copy)]
pub struct StoreSettings {
    /// SPEC §1: an open session idle longer than this is reported `idle: true`.
    pub idle_secs: i64,
    /// An MCP connection unused for longer than this is closed; the client must
    /// initialize a new one. Kept in the database so every replica agrees.
    pub connection_idle_secs: i64,
    /// Answer focus reads from this replica's memory where the store can keep
    /// it current across replicas (PostgreSQL; see [`crate::focus_cache`]).
    /// Off by default: a one-shot command has no use for the listener it
    /// starts; `brain serve` turns it on.
    pub remember_focus: bool,
    /// Most database connections the store's pool holds (PostgreSQL). Each
    /// write holds one for its whole transaction; more than the database's
    /// cores can run at once only queue inside PostgreSQL, where a waiting
    /// transaction still holds its locks.
    pub pool_size: u32,
    /// How long a focus read's mark keeps its project's changes announced to
    /// every replica's memory (PostgreSQL's `focus_bodies.watched_until`).
    /// The memory answers a read no longer than the project's rows stay
    /// watched (this long from a mark; rows marked by migration 0031 or by
    /// an older replica, an hour), and a read it misses marks again the rows
    /// with less than half of this left. A project nobody reads for this
    /// long stops being announced, and its ends stop paying for it.
    pub focus_watch_secs: u32,
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            idle_secs: 21_600,
            connection_idle_secs: 1_800,
            remember_focus: false,
            pool_size: 10,
            focus_watch_secs: 300,
        }
    }
}

/// Elevations listed and shared tokens: written once for the SQL stores
/// (`brain_store_sqlx::sql`).
#[async_trait]
pub trait CredentialStore: Send + Sync {
    /// The caller's active elevations.
    async fn elevation_list(&self, caller: &Caller) -> Result<Vec<Elevation>, StoreError>;

    /// Create a shared token; the secret is returned once and stored only as a hash.
    async fn shared_token_create(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<(SharedToken, String), StoreError>;
    async fn shared_token_revoke(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<SharedToken, StoreError>;
    async fn shared_token_list(&self, tenant: &TenantId) -> Result<Vec<SharedToken>, StoreError>;
    /// The live token with this hash, and its tenant.
    async fn shared_token_find(
        &self,
        token_hash: &str,
    ) -> Result<Option<(TenantId, SharedToken)>, StoreError>;
    /// Whether any live shared token exists (a server with no JWT key needs one).
    async fn shared_token_exists(&self) -> Result<bool, StoreError>;
}

/// The MCP connection registry and the expiry sweeps: written once for the
/// SQL stores (`brain_store_sqlx::sql::connections`).
#[async_trait]
pub trait ConnectionStore: Send + Sync {
    /// Look a connection up in the caller's tenant; another tenant's id is `None`.
    async fn connection_get(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<ConnectionRecord>, StoreError>;
    async fn connection_close(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<(), StoreError>;
    /// Open connections not past the idle limit: `(this credential with this
    /// role, the whole tenant)`, for the caps of SPEC §4.
    async fn connection_open_count(
        &self,
        tenant: &TenantId,
        kind: CredentialKind,
        credential_id: &str,
        role: Role,
    ) -> Result<(i64, i64), StoreError>;
    /// System scope: close every connection unused past the idle limit, with its
    /// tracer session, in all tenants; answers what was closed so each replica
    /// can forget it in memory too.
    async fn connection_expire(&self) -> Result<Vec<(TenantId, String)>, StoreError>;
    /// The session this MCP connection opened, for the compatibility
    /// profiles' "omit the id to use the session this connection started":
    /// the newer of the connection's newest `brain_session_start` among the
    /// tenant's 10,000 newest receipts (a bounded read: the chain has no index
    /// by connection) and the one a profile's start opened or resumed and
    /// recorded on it (`connection_started`; a resume writes no receipt).
    async fn session_started_on(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<SessionId>, StoreError>;
    /// Record on the connection the session a profile's start opened or
    /// resumed on it, and when (what `session_started_on` weighs against the
    /// receipts). A closed or unknown connection records nothing.
    async fn connection_started(
        &self,
        tenant: &TenantId,
        connection_id: &str,
        session: SessionId,
    ) -> Result<(), StoreError>;
    /// System scope: close raw runtime sessions (project `_runtime`) unused for
    /// `max_idle_secs`, in all tenants, as `abandoned`; how many were closed.
    async fn runtime_expire(&self, max_idle_secs: i64) -> Result<u64, StoreError>;
}

/// The tools' and audits' reads of one tenant: written once for the SQL
/// stores (`brain_store_sqlx::sql::reads`).
#[async_trait]
pub trait Reads: Send + Sync {
    async fn focus_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<Focus, StoreError>;
    async fn session_get(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
    ) -> Result<SessionDetail, StoreError>;
    /// The tenant's receipts in `seq` order, all at once (tests; verification
    /// reads them a page at a time: [`verify_receipts`]).
    async fn receipts(&self, tenant: &TenantId) -> Result<Vec<Receipt>, StoreError>;
    /// A session's ledger: its artifacts, oldest first, at most `limit`.
    async fn session_ledger(
        &self,
        tenant: &TenantId,
        session_id: SessionId,
        limit: i64,
    ) -> Result<Vec<Artifact>, StoreError>;
    async fn document_get(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        kind: DocumentKind,
        name: &str,
    ) -> Result<Document, StoreError>;
    /// Revisions of the base focus or a slot, newest first, below `before` (a
    /// revision) when given; `limit + 1` rows so the last one's diff has a base.
    async fn focus_history(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
        before: Option<Revision>,
        limit: i64,
    ) -> Result<Vec<HistoryEntry>, StoreError>;
    /// Agent sessions of a project, newest first, after the keyset cursor
    /// when given: among the LISTING_WINDOW newest sessions past it (of
    /// `q.status`, when given) before `slot` and `client_key` apply.
    async fn session_list(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Vec<SessionDetail>, StoreError>;
    /// Where `q`'s window of sessions ends: the `(opened_at, session_id)` of
    /// its oldest when it holds LISTING_WINDOW sessions, the next window's
    /// cursor; `None` when it holds the rest of the project's.
    async fn session_list_window_end(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Option<(DateTime<Utc>, SessionId)>, StoreError>;
    /// Receipts with `seq > after_seq`, oldest first (newest first below `before_seq`), filtered by project or session.
    async fn receipts_page(
        &self,
        tenant: &TenantId,
        q: &ReceiptQuery,
    ) -> Result<Vec<Receipt>, StoreError>;
    /// The tenant's focus bodies as resources (SPEC §2.11), ordered by
    /// project then slot (the base focus first), after `after`, at most `limit`.
    /// The server's own projects are not listed.
    async fn focus_resources(
        &self,
        tenant: &TenantId,
        after: Option<(&ProjectKey, Option<&SlotName>)>,
        limit: i64,
    ) -> Result<Vec<FocusResource>, StoreError>;
    /// Whether the tenant holds this base focus or slot (a resource that exists).
    async fn focus_exists(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
        slot: Option<&SlotName>,
    ) -> Result<bool, StoreError>;
    /// Whether the tenant has been provisioned (by its first verified call).
    async fn tenant_exists(&self, tenant: &TenantId) -> Result<bool, StoreError>;
    /// The tenant's ledger tip as recorded beside the chain: `(seq, hash)`,
    /// `(0, GENESIS_HASH)` for a tenant with no receipts.
    async fn ledger_tip(&self, tenant: &TenantId) -> Result<(i64, String), StoreError>;
    /// Full-text search over a project's artifacts, best first.
    async fn recall(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Vec<RecallHit>, StoreError>;
    /// Where `q`'s window ends when the project goes on past it: the
    /// `(created_at, artifact_id)` of its oldest artifact, the next window's
    /// cursor; `None` when the window holds the rest of the project. A
    /// search's window is LISTING_WINDOW artifacts and SEARCH_WINDOW_BYTES of
    /// text past `q.before`, a listing's LISTING_WINDOW artifacts.
    async fn recall_window_end(
        &self,
        tenant: &TenantId,
        q: &RecallQuery,
    ) -> Result<Option<(DateTime<Utc>, ArtifactId)>, StoreError>;
    /// The base focus, and the project's slots with their revisions by name
    /// (at most 200), in one read.
    async fn focus_with_slots(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<(Focus, Vec<(SlotName, Revision)>), StoreError>;
}

/// The daily briefs: written once for the SQL stores (`brain_store_sqlx::sql::briefs`).
#[async_trait]
pub trait DailyBriefs: Send + Sync {
    /// Write today's brief (UTC) for every project active in the last 24 h that
    /// has none yet; safe on several replicas (the day's row is written once).
    async fn generate_daily_briefs(&self, now: DateTime<Utc>) -> Result<usize, StoreError>;
}

/// What operators read: the console (SPEC §4), `/metrics` and readiness;
/// written once for the SQL stores
/// (`brain_store_sqlx::sql::console`).
#[async_trait]
pub trait OperatorReads: Send + Sync {
    /// The tenant's projects by name (the console's list, brain_project_list),
    /// filtered as `q` says; the server's own are left out.
    async fn projects(
        &self,
        tenant: &TenantId,
        q: &ProjectQuery<'_>,
    ) -> Result<Vec<ProjectSummary>, StoreError>;
    /// The caller's own open operator connections and sessions (newest first, 50 each).
    async fn operator_targets(&self, caller: &Caller) -> Result<OperatorTargets, StoreError>;
    /// The names of a project's mental models.
    async fn mental_model_names(
        &self,
        tenant: &TenantId,
        project: &ProjectKey,
    ) -> Result<Vec<String>, StoreError>;
    /// Readiness: the database answers.
    async fn ping(&self) -> Result<(), StoreError>;
    /// Gauges for `/metrics`, across all tenants (operators' view, never a tool's).
    async fn stats(&self) -> Result<StoreStats, StoreError>;
    /// The bytes a tenant holds, counted as its writes commit, and the quota.
    async fn tenant_usage(&self, tenant: &TenantId) -> Result<TenantUsage, StoreError>;
    /// Hold every tenant's writes to `bytes` (0 = unlimited): `brain serve`
    /// writes its setting at start, so every replica should share it.
    async fn set_tenant_quota(&self, bytes: i64) -> Result<(), StoreError>;
}

/// A project's or a tenant's end (operators only; written once for the SQL
/// stores, `brain_store_sqlx::sql::lifecycle`).
#[async_trait]
pub trait Lifecycle: Send + Sync {
    /// Delete a project: every body and text of it, then the project; its
    /// receipts stay and a `project_deleted` receipt records who deleted it.
    /// `not_found` when there is none; `forbidden` unless an operator.
    async fn project_delete(&self, caller: &Caller, project: &ProjectKey)
    -> Result<(), StoreError>;
    /// Delete everything of a tenant, receipts included; whether it existed.
    async fn tenant_delete(&self, tenant: &TenantId) -> Result<bool, StoreError>;
}

/// A tenant's data out of one store and into another (`brain_store_sqlx::sql::export`).
#[async_trait]
pub trait Portable: Send + Sync {
    /// Every row of the tenant, each handed to `sink` as one JSON value, in
    /// the export format's order; the rows written.
    async fn export_tenant(
        &self,
        tenant: &TenantId,
        sink: &mut (dyn FnMut(serde_json::Value) -> Result<(), StoreError> + Send),
    ) -> Result<u64, StoreError>;
    /// An export's lines into a tenant that holds nothing, in one
    /// transaction: all of it or, on any error, nothing. The rows written.
    async fn import_tenant(
        &self,
        tenant: &TenantId,
        lines: &mut (dyn Iterator<Item = Result<serde_json::Value, StoreError>> + Send),
    ) -> Result<u64, StoreError>;
}

/// Storage behind one async trait; the server holds an `Arc<dyn Store>` chosen at boot.
/// Its session calls come from [`crate::writes::SessionWrites`], written once.
///
/// Closing calls (end, relay, abandon) answer the tool's output JSON, because a
/// replay must answer the stored result of the first call (SPEC §3.5).
#[async_trait]
pub trait Store:
    crate::writes::SessionWrites
    + CredentialStore
    + ConnectionStore
    + Reads
    + OperatorReads
    + DailyBriefs
    + Lifecycle
    + Portable
    + Send
    + Sync
    + 'static
{
    /// Close the pool after in-flight calls have finished (graceful shutdown).
    async fn close(&self);

    /// Hand every committed focus change, written on any replica, to
    /// `listener` from now on (PostgreSQL: one LISTEN connection per replica;
    /// SQLite: in process). Call once per process.
    async fn watch_focus(&self, listener: crate::feed::FocusListener) -> Result<(), StoreError>;
}

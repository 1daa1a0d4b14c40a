//! The `Store` trait: one method per tool, each one transaction in a backend,
//! and the outcome types the server turns into tool results.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

pub use crate::error::StoreError;
use crate::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use crate::memory::{Brief, Document, DocumentKind, HistoryEntry, RecallHit};
use crate::model::ArtifactKind;
use crate::model::{
    Artifact, Caller, CredentialKind, Focus, Revision, Role, Session, SessionStatus,
};
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
}

impl Default for StoreSettings {
    fn default() -> Self {
        Self {
            idle_secs: 21_600,
            connection_idle_secs: 1_800,
            remember_focus: false,
            pool_size: 10,
        }
    }
}

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

/// A project as the operator console lists it (SPEC §4 `/brain-admin/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectSummary {
    pub project: ProjectKey,
    pub base_revision: Revision,
    /// Its named slots (the base focus aside).
    pub slots: i64,
    pub open_sessions: i64,
    /// Open sessions idle past the store's idle threshold.
    pub idle_sessions: i64,
    /// The newest activity of any of its agent sessions.
    #[serde(serialize_with = "crate::store::ser_opt_time")]
    pub last_activity_at: Option<DateTime<Utc>>,
}

impl ProjectSummary {
    /// From `(project, base revision, slots, open, idle, last activity in µs)`.
    pub fn from_row(
        (project, base_revision, slots, open_sessions, idle_sessions, last): (
            String,
            i64,
            i64,
            i64,
            i64,
            Option<i64>,
        ),
    ) -> Option<Self> {
        Some(Self {
            project: ProjectKey::parse(&project).ok()?,
            base_revision,
            slots,
            open_sessions,
            idle_sessions,
            last_activity_at: last.and_then(DateTime::from_timestamp_micros),
        })
    }
}

/// Which projects [`OperatorReads::projects`] lists: each filter given
/// applies (AND), at most `limit`, by name after `after`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProjectQuery<'a> {
    /// Names containing this.
    pub search: Option<&'a str>,
    /// Names starting with this.
    pub prefix: Option<&'a str>,
    /// Names after this one (the previous page's last).
    pub after: Option<&'a str>,
    pub limit: i64,
}

/// What an operator may elevate (SPEC §1 Elevation): its own open connections
/// and open sessions, opened with its operator token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct OperatorTargets {
    pub connections: Vec<String>,
    pub sessions: Vec<OperatorSession>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperatorSession {
    pub session_id: SessionId,
    pub project: ProjectKey,
}

impl OperatorTargets {
    /// From the store's rows: connection ids, and `(session uuid, project)`;
    /// a session whose project name no longer parses is skipped.
    pub fn from_rows(connections: Vec<String>, sessions: Vec<(uuid::Uuid, String)>) -> Self {
        Self {
            connections,
            sessions: sessions
                .into_iter()
                .filter_map(|(id, p)| {
                    Some(OperatorSession {
                        session_id: SessionId::from_uuid(id),
                        project: ProjectKey::parse(&p).ok()?,
                    })
                })
                .collect(),
        }
    }
}

/// One row of `focus_resources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FocusResource {
    pub project: ProjectKey,
    pub slot: Option<SlotName>,
    pub revision: Revision,
}

impl FocusResource {
    /// From a `focus_bodies` row, where the base focus is slot `''`; a row
    /// whose names no longer parse is skipped.
    pub fn from_row((project, slot, revision): (String, String, Revision)) -> Option<Self> {
        Some(Self {
            project: ProjectKey::parse(&project).ok()?,
            slot: match slot.as_str() {
                "" => None,
                s => Some(SlotName::parse(s).ok()?),
            },
            revision,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq)]
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

/// The open MCP connections a credential (with one role) and a tenant may
/// hold (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    pub per_credential: i64,
    pub per_tenant: i64,
}

/// What `/metrics` reads from the store on each scrape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub open_sessions: i64,
    pub open_connections: i64,
    /// Connections in the pool, and how many of them are idle.
    pub pool_size: u32,
    pub pool_idle: u32,
    /// The replica's memory of focus reads, when on.
    pub focus_memory: Option<crate::focus_cache::FocusMemoryStats>,
    /// Tenants holding 80 % of the quota or more, the most bytes any tenant
    /// holds, and the quota (0 = unlimited): no gauge per tenant.
    pub tenants_near_quota: i64,
    pub largest_usage_bytes: i64,
    pub quota_bytes: i64,
}

/// The bytes of bodies and texts a tenant holds, and the quota its writes
/// are held to (0 = unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TenantUsage {
    pub bytes: i64,
    pub quota_bytes: i64,
}

/// An MCP connection as the registry holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    pub tenant: TenantId,
    pub credential_kind: CredentialKind,
    pub credential_id: String,
    /// The role of the token that opened it: a token of another role
    /// presenting the connection is answered as if it did not exist.
    pub role: Role,
    pub closed: bool,
    /// The client's initialize parameters, for restoring the connection elsewhere.
    pub init_params: Option<Value>,
    /// The connection's tracer session.
    pub tracer_session: Option<SessionId>,
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
    /// The newest session started (with `brain_session_start` or a profile's
    /// start) on this MCP connection, from the receipts: the compatibility
    /// profiles' "the session this connection opened".
    async fn session_started_on(
        &self,
        tenant: &TenantId,
        connection_id: &str,
    ) -> Result<Option<SessionId>, StoreError>;
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
    /// Agent sessions of a project, newest first, after the keyset cursor when given.
    async fn session_list(
        &self,
        tenant: &TenantId,
        q: &SessionListQuery,
    ) -> Result<Vec<SessionDetail>, StoreError>;
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

/// A tenant's data out of one store and into another (`brain_store_sqlx::sql::portable`).
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

#[derive(Debug, Clone)]
pub struct RecallQuery {
    pub project: ProjectKey,
    /// Web-search syntax; `None` lists the matching artifacts newest first.
    pub query: Option<String>,
    /// Only todos not yet acknowledged (the briefing's inbox).
    pub inbox: bool,
    /// Only this session's ledger.
    pub session_id: Option<crate::ids::SessionId>,
    /// A listing's page: only artifacts older than this `(created_at,
    /// artifact_id)`, the previous page's last (a keyset, so acknowledging the
    /// todos of one page does not skip any of the next).
    pub before: Option<(DateTime<Utc>, crate::ids::ArtifactId)>,
    pub kinds: Vec<ArtifactKind>,
    /// Only artifacts carrying every one of these tags (none: no filter).
    pub tags: Vec<String>,
    pub limit: i64,
    pub offset: i64,
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
    pub limit: i64,
}

#[derive(Debug, Clone)]
pub struct ReceiptQuery {
    pub project: Option<ProjectKey>,
    pub session_id: Option<SessionId>,
    pub after_seq: i64,
    /// `Some`: only `seq` below this, newest first.
    pub before_seq: Option<i64>,
    pub limit: i64,
}

/// What [`verify_receipts`] found: `Ok((count, tip seq, tip hash))`, or the
/// first bad seq and why.
pub type ChainVerdict = Result<(usize, i64, String), (i64, crate::receipt::ChainFault)>;

/// Receipts read per page by [`verify_receipts`].
pub const VERIFY_PAGE: i64 = 1000;

/// Check `tenant`'s receipt chain against its recorded tip (`brain receipts
/// verify`, the console's check), `page` receipts at a time: memory is one
/// page's, whatever the chain's length. The tip is read first, and the chain
/// up to it: a receipt written in between is not part of what is checked,
/// rather than a false `seq_gap`. A receipt past the tip must be one the tip
/// has reached since (a receipt and its tip commit together); otherwise the
/// tip was wound back or deleted, and that is a `seq_gap` after it.
pub async fn verify_receipts(
    store: &dyn Store,
    tenant: &TenantId,
    page: i64,
) -> Result<ChainVerdict, StoreError> {
    let (tip_seq, tip_hash) = store.ledger_tip(tenant).await?;
    let mut check = crate::receipt::ChainCheck::default();
    while check.checked_to() < tip_seq {
        let after = check.checked_to();
        let q = ReceiptQuery {
            project: None,
            session_id: None,
            after_seq: after,
            before_seq: None,
            limit: page.clamp(1, tip_seq - after),
        };
        let found = store.receipts_page(tenant, &q).await?;
        let upto_tip: Vec<&Receipt> = found.iter().filter(|r| r.seq <= tip_seq).collect();
        if upto_tip.is_empty() {
            break;
        }
        if let Err(bad) = check.feed(upto_tip) {
            return Ok(Err(bad));
        }
    }
    let count = match check.finish((tip_seq, &tip_hash)) {
        Ok(n) => n,
        Err(bad) => return Ok(Err(bad)),
    };
    let past = ReceiptQuery {
        project: None,
        session_id: None,
        after_seq: tip_seq,
        before_seq: None,
        limit: 1,
    };
    if let Some(r) = store.receipts_page(tenant, &past).await?.first() {
        let (now, _) = store.ledger_tip(tenant).await?;
        if now < r.seq {
            return Ok(Err((tip_seq + 1, crate::receipt::ChainFault::SeqGap)));
        }
    }
    Ok(Ok((count, tip_seq, tip_hash)))
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

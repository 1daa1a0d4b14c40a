//! What operators read (the console, `/metrics`) and the connection
//! registry's record.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::ids::{ProjectKey, SessionId, SlotName, TenantId};
use crate::model::{CredentialKind, Revision, Role};

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

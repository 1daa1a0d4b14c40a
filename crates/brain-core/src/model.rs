//! Plain data: what sessions, focus bodies, artifacts and callers are.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use crate::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};

/// The reserved project that holds tracer sessions; agent-facing counts and
/// listings only ever consider agent sessions.
pub fn tracer_project() -> ProjectKey {
    ProjectKey::reserved(ProjectKey::TRACERS)
}

/// A revision of the base focus or of a slot body; 0 is the empty body at creation.
pub type Revision = i64;

/// RFC 3339 in UTC with microseconds, the precision both stores keep.
pub fn rfc3339(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// The current time truncated to microseconds, so a value read back from the
/// database equals the one that was hashed.
pub fn now_micros() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}

fn ser_time<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(t))
}

fn ser_opt_time<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(t)),
        None => s.serialize_none(),
    }
}

macro_rules! str_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

str_enum!(
    /// SPEC §1 session status.
    SessionStatus { Open => "open", Ended => "ended", Conflicted => "conflicted", Relayed => "relayed", Abandoned => "abandoned" }
);
str_enum!(
    /// `agent` sessions are the clients'; `tracer` sessions belong to an MCP connection.
    SessionKind { Agent => "agent", Tracer => "tracer" }
);
str_enum!(
    /// What an end or relay did to the focus.
    FocusOutcome { Applied => "applied", Unchanged => "unchanged", Conflict => "conflict" }
);
str_enum!(
    /// SPEC §2.7 artifact kinds.
    ArtifactKind { Fact => "fact", Note => "note", Decision => "decision", Todo => "todo", Link => "link" }
);
str_enum!(
    /// How a caller authenticated (SPEC §1 Credential).
    CredentialKind { Jwt => "jwt", SharedToken => "shared_token", Stdio => "stdio", Cli => "cli" }
);
str_enum!(
    /// JWT claim `role`.
    Role { Agent => "agent", Operator => "operator", Relay => "relay" }
);

/// Who is calling, as the front door resolved it. Travels with every store call
/// so receipts can say who did what on which connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub tenant: TenantId,
    pub kind: CredentialKind,
    /// `iss` + `sub` for JWTs (stable across refreshes), the token id for shared tokens.
    pub credential_id: String,
    /// The human-meaningful subject (`sub`) recorded in receipts.
    pub subject: String,
    pub role: Role,
    /// The MCP connection (`Mcp-Session-Id`) the call came on, if any.
    pub connection_id: Option<String>,
    /// The JWT's `jti`, recorded in receipts.
    pub token_id: Option<String>,
    /// The tracer session of the caller's MCP connection: receipts of calls that
    /// address no session of their own are filed under it.
    pub tracer_session: Option<SessionId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenedBy {
    pub kind: CredentialKind,
    pub subject: String,
    /// The role of the token that opened the session: only an operator-opened
    /// session can be elevated (SPEC §1 Elevation). Not shown in outputs.
    #[serde(skip)]
    pub role: Role,
    /// The credential (`iss` + `sub`, token id) that opened it; `None` on rows
    /// written before it was recorded. Not shown in outputs.
    #[serde(skip)]
    pub credential_id: Option<String>,
}

/// One working session, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Session {
    pub session_id: SessionId,
    pub project: ProjectKey,
    pub client_key: ClientKey,
    pub kind: SessionKind,
    pub bound_slot: Option<SlotName>,
    pub started_focus_revision: Revision,
    /// The revision of the focus its end writes (its slot's if bound, else
    /// the base's) as it last read it: at start, bind or as a relay's
    /// receiver. What a restarted agent passes at end (or merges from).
    /// `None` only for a session bound before brain recorded it.
    pub read_revision: Option<Revision>,
    /// The session whose relay opened this one.
    pub relayed_from: Option<SessionId>,
    /// The session this one's relay opened (status relayed).
    pub relayed_to: Option<SessionId>,
    pub status: SessionStatus,
    #[serde(serialize_with = "ser_time")]
    pub opened_at: DateTime<Utc>,
    #[serde(serialize_with = "ser_time")]
    pub last_activity_at: DateTime<Utc>,
    #[serde(serialize_with = "ser_opt_time")]
    pub ended_at: Option<DateTime<Utc>>,
    pub summary: Option<String>,
    pub next_focus: Option<String>,
    pub nothing_to_capture_reason: Option<String>,
    pub focus_outcome: Option<FocusOutcome>,
    /// Why the session was abandoned, when it was.
    pub abandon_reason: Option<String>,
    pub opened_by: OpenedBy,
}

impl Session {
    /// A new open agent session for `caller`, started at base revision `base_revision`.
    pub fn open_agent(
        caller: &Caller,
        project: ProjectKey,
        client_key: ClientKey,
        bound_slot: Option<SlotName>,
        base_revision: Revision,
    ) -> Self {
        let now = now_micros();
        // Bound, it is the slot's: the store reads it as it opens the session.
        let read_revision = bound_slot.is_none().then_some(base_revision);
        Self {
            session_id: SessionId::new_random(),
            project,
            client_key,
            kind: SessionKind::Agent,
            bound_slot,
            started_focus_revision: base_revision,
            read_revision,
            relayed_from: None,
            relayed_to: None,
            status: SessionStatus::Open,
            opened_at: now,
            last_activity_at: now,
            ended_at: None,
            summary: None,
            next_focus: None,
            nothing_to_capture_reason: None,
            focus_outcome: None,
            abandon_reason: None,
            opened_by: OpenedBy {
                kind: caller.kind,
                subject: caller.subject.clone(),
                role: caller.role,
                credential_id: Some(caller.credential_id.clone()),
            },
        }
    }

    /// The tracer session of an MCP connection (SPEC §1): opened at initialize,
    /// closed with the connection, refused by every lifecycle tool.
    pub fn open_tracer(caller: &Caller, connection_id: &str) -> Self {
        let mut s = Self::open_agent(
            caller,
            tracer_project(),
            // A connection id is a bearer capability: the tracer, which every
            // tenant member can list, carries only its fingerprint.
            ClientKey(format!(
                "mcp:{}",
                crate::operators::connection_fingerprint(connection_id)
            )),
            None,
            0,
        );
        s.kind = SessionKind::Tracer;
        s
    }

    pub fn is_open(&self) -> bool {
        self.status == SessionStatus::Open
    }

    /// SPEC §1: idle is a report, never a state change.
    pub fn is_idle(&self, now: DateTime<Utc>, idle_secs: i64) -> bool {
        self.is_open() && idle_since(self.last_activity_at, now, idle_secs)
    }
}

/// SPEC §1: unused for longer than `idle_secs` (a report, never a state change).
pub fn idle_since(last_activity_at: DateTime<Utc>, now: DateTime<Utc>, idle_secs: i64) -> bool {
    (now - last_activity_at).num_seconds() > idle_secs
}

/// The base focus (slot `None`) or a slot body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Focus {
    pub body: String,
    pub revision: Revision,
    #[serde(serialize_with = "ser_opt_time")]
    pub updated_at: Option<DateTime<Utc>>,
    pub updated_by_session: Option<SessionId>,
}

impl Focus {
    pub fn empty() -> Self {
        Self {
            body: String::new(),
            revision: 0,
            updated_at: None,
            updated_by_session: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Artifact {
    pub artifact_id: ArtifactId,
    pub project: ProjectKey,
    pub session_id: Option<SessionId>,
    pub kind: ArtifactKind,
    pub text: String,
    pub tags: Vec<String>,
    #[serde(serialize_with = "ser_time")]
    pub created_at: DateTime<Utc>,
    /// When a todo left the inbox (brain_todo_ack), and the note given then.
    #[serde(serialize_with = "ser_opt_time")]
    pub acknowledged_at: Option<DateTime<Utc>>,
    pub ack_note: Option<String>,
}

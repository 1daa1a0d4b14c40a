//! Who may elevate, and shared tokens (SPEC §1 Credential and Elevation, §4).

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use serde_json::json;

use crate::digest::sha256_hex;
use crate::error::{DomainError, ErrorCode};
use crate::ids::{ElevationId, SessionId, SharedTokenId};
use crate::model::{Caller, CredentialKind, Role, rfc3339};

/// The default lifetime of an elevation.
pub const ELEVATION_DEFAULT_SECS: i64 = 15 * 60;

/// What an elevation names: one MCP connection, or — for a client on the
/// sessionless protocol revision — one of its brain sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElevationTarget {
    Connection(String),
    Session(SessionId),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElevationRequest {
    pub target: ElevationTarget,
    pub reason: String,
    pub ttl_secs: i64,
    /// `BRAIN_ELEVATION_MAX_SECS`.
    pub max_secs: i64,
    pub digest: String,
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Elevation {
    pub id: ElevationId,
    pub subject: String,
    pub mcp_session_id: Option<String>,
    pub session_id: Option<SessionId>,
    pub reason: String,
    #[serde(serialize_with = "ser_time")]
    pub granted_at: DateTime<Utc>,
    #[serde(serialize_with = "ser_time")]
    pub expires_at: DateTime<Utc>,
    #[serde(serialize_with = "ser_opt_time")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// Only a `jwt` credential with role `operator` holds, grants or revokes
/// elevations; an agent or relay token of the same subject is refused.
pub fn check_operator(caller: &Caller) -> Result<(), DomainError> {
    match caller.kind {
        CredentialKind::SharedToken | CredentialKind::Stdio | CredentialKind::Cli => {
            Err(DomainError::new(
                ErrorCode::Forbidden,
                "shared-token, stdio and CLI callers can never be elevated; use an operator JWT",
            ))
        }
        CredentialKind::Jwt if caller.role != Role::Operator => Err(DomainError::new(
            ErrorCode::Forbidden,
            format!(
                "only role operator can be elevated, this credential has role {}",
                caller.role
            ),
        )),
        CredentialKind::Jwt => Ok(()),
    }
}

/// An elevation request: an operator credential, a reason, and a lifetime of
/// 1 s to `max_secs`. Checked before the target is looked at.
pub fn check_elevation_request(caller: &Caller, req: &ElevationRequest) -> Result<(), DomainError> {
    check_operator(caller)?;
    if req.reason.trim().is_empty() {
        return Err(DomainError::invalid_argument("reason", "must not be blank"));
    }
    if req.ttl_secs < 1 || req.ttl_secs > req.max_secs {
        return Err(DomainError::invalid_argument(
            "ttl_secs",
            format!("must be between 1 and {} seconds", req.max_secs),
        )
        .with_details(json!({"field": "ttl_secs", "max": req.max_secs})));
    }
    Ok(())
}

/// A connection id's non-reversible fingerprint: what receipts and tracer
/// sessions show to anyone but the connection's owner (an id is a bearer
/// capability; SPEC §1 Elevation).
pub fn connection_fingerprint(connection_id: &str) -> String {
    let hex = sha256_hex(connection_id.as_bytes());
    format!("fp_{}", &hex[..24])
}

/// An MCP connection as an elevation grant sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionOwner {
    pub credential_id: String,
    pub role: Role,
    pub closed: bool,
}

/// Whether `caller` may elevate this connection: an open one that the same
/// credential opened with an operator token.
pub fn may_elevate_connection(caller: &Caller, c: &ConnectionOwner) -> bool {
    !c.closed && c.credential_id == caller.credential_id && c.role == Role::Operator
}

/// Whether `caller` may elevate this brain session (sessionless clients): an
/// open agent session the same credential opened with an operator token.
pub fn may_elevate_session(caller: &Caller, s: &crate::model::Session) -> bool {
    let same_credential = match &s.opened_by.credential_id {
        Some(id) => *id == caller.credential_id,
        None => false,
    };
    s.is_open()
        && s.kind == crate::model::SessionKind::Agent
        && s.opened_by.kind == CredentialKind::Jwt
        && s.opened_by.role == Role::Operator
        && same_credential
}

/// The refusal for a target that is unknown, closed, or opened by another
/// credential: all answered alike, so the answer reveals nothing.
pub fn target_not_found() -> DomainError {
    DomainError::new(
        ErrorCode::SessionNotFound,
        "no open connection or session with this id was opened by your credential; elevate one of your own",
    )
}

/// A shared token as listed (its secret is never stored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharedToken {
    pub token_id: SharedTokenId,
    pub name: String,
    #[serde(serialize_with = "ser_time")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "ser_opt_time")]
    pub revoked_at: Option<DateTime<Utc>>,
}

pub const SHARED_TOKEN_PREFIX: &str = "brain_st_";

/// A new shared token secret: the prefix and 64 hex digits from two v4 UUIDs
/// (244 random bits from the OS generator).
pub fn new_shared_token_secret() -> String {
    format!(
        "{SHARED_TOKEN_PREFIX}{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether `token` has the form [`new_shared_token_secret`] gives every
/// shared token: the prefix and 64 lowercase hex digits. Anything else is
/// refused without asking the database.
pub fn is_shared_token_shape(token: &str) -> bool {
    token.strip_prefix(SHARED_TOKEN_PREFIX).is_some_and(|rest| {
        rest.len() == 64 && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The only form in which a shared token is stored or looked up.
pub fn shared_token_hash(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TenantId;

    fn caller(kind: CredentialKind, role: Role) -> Caller {
        Caller {
            tenant: TenantId::parse("t").unwrap(),
            kind,
            credential_id: "c".into(),
            subject: "s".into(),
            role,
            connection_id: None,
            token_id: None,
            tracer_session: None,
        }
    }

    fn req(ttl: i64) -> ElevationRequest {
        ElevationRequest {
            target: ElevationTarget::Connection("c".into()),
            reason: "fix the focus".into(),
            ttl_secs: ttl,
            max_secs: 3600,
            digest: "d".into(),
        }
    }

    #[test]
    fn only_operator_jwts_may_be_elevated() {
        let ok = check_elevation_request(&caller(CredentialKind::Jwt, Role::Operator), &req(900));
        assert!(ok.is_ok());
        for c in [
            caller(CredentialKind::Jwt, Role::Agent),
            caller(CredentialKind::Jwt, Role::Relay),
            caller(CredentialKind::SharedToken, Role::Operator),
            caller(CredentialKind::Stdio, Role::Operator),
        ] {
            let e = check_elevation_request(&c, &req(900)).err().map(|e| e.code);
            assert_eq!(e, Some(ErrorCode::Forbidden), "{c:?}");
        }
    }

    #[test]
    fn ttl_is_bounded_by_the_maximum() {
        let op = caller(CredentialKind::Jwt, Role::Operator);
        assert!(check_elevation_request(&op, &req(3600)).is_ok());
        for bad in [0, -5, 3601] {
            let e = check_elevation_request(&op, &req(bad))
                .err()
                .map(|e| e.code);
            assert_eq!(e, Some(ErrorCode::InvalidArgument), "{bad}");
        }
    }

    #[test]
    fn shared_tokens_are_random_and_hashed() {
        let a = new_shared_token_secret();
        let b = new_shared_token_secret();
        assert!(a.starts_with(SHARED_TOKEN_PREFIX) && a.len() == SHARED_TOKEN_PREFIX.len() + 64);
        assert_ne!(a, b);
        assert_eq!(shared_token_hash(&a).len(), 64);
        assert_ne!(shared_token_hash(&a), shared_token_hash(&b));
        assert!(is_shared_token_shape(&a) && is_shared_token_shape(&b));
    }

    #[test]
    fn only_the_shape_of_a_minted_token_is_looked_up() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(is_shared_token_shape(&format!("brain_st_{hex}")));
        for bad in [
            String::new(),
            "brain_st_".to_owned(),
            format!("brain_st_{hex}0"),
            format!("brain_st_{}", &hex[1..]),
            format!("brain_st_{}", hex.to_uppercase()),
            format!("brain_st_{}g", &hex[1..]),
            format!("brain_sT_{hex}"),
            format!("brain_st_{}\u{e9}", &hex[2..]),
        ] {
            assert!(!is_shared_token_shape(&bad), "{bad:?}");
        }
    }
}

/// How stale a connection's `last_seen_at` may get before a request refreshes
/// it: most requests only read their connection's row.
pub const SEEN_GRANULARITY_SECS: i64 = 30;

/// What looking a connection up does about its `last_seen_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionUpkeep {
    Keep,
    /// Refresh `last_seen_at` (at most every `SEEN_GRANULARITY_SECS`, or a
    /// quarter of a shorter idle limit).
    Touch,
    /// Unused past the idle limit: close it and its tracer, on whichever
    /// replica sees it first.
    Close,
}

pub fn connection_upkeep(
    last_seen: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
    idle_secs: i64,
) -> ConnectionUpkeep {
    let idle = (now - last_seen).num_seconds();
    if idle > idle_secs {
        ConnectionUpkeep::Close
    } else if idle > SEEN_GRANULARITY_SECS.min(idle_secs / 4) {
        ConnectionUpkeep::Touch
    } else {
        ConnectionUpkeep::Keep
    }
}

#[cfg(test)]
mod upkeep_tests {
    use super::*;

    #[test]
    fn a_lookup_touches_at_most_every_granule_and_closes_past_the_limit() {
        let t0 = chrono::DateTime::from_timestamp(1_000_000, 0).unwrap_or_default();
        let at = |s| t0 + chrono::Duration::seconds(s);
        assert_eq!(connection_upkeep(t0, at(30), 3600), ConnectionUpkeep::Keep);
        assert_eq!(connection_upkeep(t0, at(31), 3600), ConnectionUpkeep::Touch);
        assert_eq!(
            connection_upkeep(t0, at(3600), 3600),
            ConnectionUpkeep::Touch
        );
        assert_eq!(
            connection_upkeep(t0, at(3601), 3600),
            ConnectionUpkeep::Close
        );
        // A short idle limit touches at a quarter of it.
        assert_eq!(connection_upkeep(t0, at(10), 40), ConnectionUpkeep::Keep);
        assert_eq!(connection_upkeep(t0, at(11), 40), ConnectionUpkeep::Touch);
    }
}

//! Validated identifiers. Parse, don't validate: once a value has one of these
//! types it is known to be well-formed, so stores and rules never re-check it.

use serde::{Serialize, Serializer};
use uuid::Uuid;

use crate::error::DomainError;

fn charset_ok(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
}

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub const MAX_LEN: usize = $max;

            pub fn parse(s: &str) -> Result<Self, DomainError> {
                if s.is_empty() || s.len() > Self::MAX_LEN {
                    return Err(DomainError::invalid_argument(
                        $field,
                        format!("must be 1 to {} characters", Self::MAX_LEN),
                    ));
                }
                if !charset_ok(s) {
                    return Err(DomainError::invalid_argument(
                        $field,
                        "may only hold letters, digits and . _ / -",
                    ));
                }
                Ok(Self(s.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
    };
}

string_id!(
    /// A tenant: every row belongs to exactly one.
    TenantId, "tenant", 64
);
string_id!(
    /// A project inside a tenant (`[A-Za-z0-9._/-]`, 1–128).
    ProjectKey, "project", 128
);

impl TenantId {
    /// No tenant: the transaction of a sweep or lookup across tenants. It
    /// is empty, which no tenant's id can be, so it names no tenant's rows.
    pub fn across() -> Self {
        Self(String::new())
    }
}

impl ProjectKey {
    /// The project that holds the server's tracer sessions.
    pub const TRACERS: &'static str = "_mcp";
    /// The project that holds raw runtime sessions (the `aziel` profile).
    pub const RUNTIME: &'static str = "_runtime";

    /// The project of raw runtime sessions; valid by construction.
    pub fn runtime() -> Self {
        Self(Self::RUNTIME.to_owned())
    }

    /// A project name the server itself uses; valid by construction.
    pub(crate) fn reserved(name: &str) -> Self {
        Self(name.to_owned())
    }

    /// Whether this is one of the server's own projects, which callers never name.
    pub fn is_reserved(&self) -> bool {
        self.0 == Self::TRACERS || self.0 == Self::RUNTIME
    }

    /// A project a caller may name: any valid key but the reserved ones.
    pub fn parse_for_caller(s: &str) -> Result<Self, DomainError> {
        if s == Self::TRACERS || s == Self::RUNTIME {
            return Err(DomainError::invalid_argument(
                "project",
                "is reserved for the server's own sessions; choose another name",
            ));
        }
        Self::parse(s)
    }
}
string_id!(
    /// A named sub-focus of a project (same charset, ≤ 64).
    SlotName, "slot", 64
);

/// The client identity chosen at start: an isolation guard, not authentication.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientKey(pub(crate) String);

impl ClientKey {
    pub const MAX_CHARS: usize = 200;

    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        if s.trim().is_empty() {
            return Err(DomainError::invalid_argument(field, "must not be blank"));
        }
        if s.chars().count() > Self::MAX_CHARS {
            return Err(DomainError::invalid_argument(
                field,
                format!("must be at most {} characters", Self::MAX_CHARS),
            ));
        }
        if !s.chars().all(crate::text::is_identifier_char) {
            return Err(DomainError::invalid_argument(
                field,
                "may not hold control or bidirectional-override characters",
            ));
        }
        Ok(Self(s.to_owned()))
    }

    /// The prefixes of the client keys the compatibility profiles give their
    /// sessions (derived from the subject, so guessable: see
    /// `rules::profile_owned`).
    pub const PROFILE_PREFIXES: [&'static str; 2] = ["brain-core:", "aziel:"];

    pub fn has_profile_prefix(s: &str) -> bool {
        Self::PROFILE_PREFIXES.iter().any(|p| s.starts_with(p))
    }

    /// A client key a caller chooses for brain_session_start: any valid key
    /// but one of the profiles' own.
    pub fn parse_for_caller(field: &str, s: &str) -> Result<Self, DomainError> {
        if Self::has_profile_prefix(s) {
            return Err(DomainError::invalid_argument(
                field,
                "may not start with brain-core: or aziel: (the compatibility profiles' own keys); choose another",
            ));
        }
        Self::parse(field, s)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for ClientKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Ids rendered as a prefix and 32 lowercase hex digits; the hyphenated UUID
/// form is accepted on input too.
macro_rules! prefixed_uuid {
    ($(#[$doc:meta])* $name:ident, $prefix:literal, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            pub fn new_random() -> Self {
                Self(Uuid::new_v4())
            }

            pub fn from_uuid(u: Uuid) -> Self {
                Self(u)
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }

            pub fn parse(s: &str) -> Result<Self, DomainError> {
                let bad = || {
                    DomainError::invalid_argument(
                        $field,
                        concat!("must be ", $prefix, " followed by 32 lowercase hex digits, or a hyphenated UUID"),
                    )
                };
                if let Some(hex) = s.strip_prefix($prefix) {
                    if hex.len() != 32
                        || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    {
                        return Err(bad());
                    }
                    return Uuid::try_parse(hex).map(Self).map_err(|_| bad());
                }
                // Only the canonical 36-character hyphenated form, so one id has few spellings.
                if s.len() == 36 && s.as_bytes().get(8) == Some(&b'-') {
                    return Uuid::try_parse(s).map(Self).map_err(|_| bad());
                }
                Err(bad())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0.simple())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

prefixed_uuid!(
    /// A working session (`sess_` + 32 hex).
    SessionId, "sess_", "session_id"
);
prefixed_uuid!(
    /// An artifact (`art_` + 32 hex).
    ArtifactId, "art_", "artifact_id"
);
prefixed_uuid!(
    /// A receipt (`rcpt_` + 32 hex).
    ReceiptId, "rcpt_", "receipt_id"
);
prefixed_uuid!(
    /// An elevation granted through /brain-admin (`elv_` + 32 hex).
    ElevationId, "elv_", "elevation_id"
);
prefixed_uuid!(
    /// A shared token's public id (`stk_` + 32 hex); the secret part is never stored.
    SharedTokenId, "stk_", "token_id"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn session_id_round_trips_in_both_forms() {
        let id = SessionId::new_random();
        let shown = id.to_string();
        assert!(shown.starts_with("sess_") && shown.len() == 37);
        assert_eq!(SessionId::parse(&shown).ok(), Some(id));
        let hyphenated = id.as_uuid().hyphenated().to_string();
        assert_eq!(SessionId::parse(&hyphenated).ok(), Some(id));
    }

    #[test]
    fn session_id_rejects_other_forms() {
        for bad in [
            "",
            "sess_",
            "sess_0123",
            "sess_0123456789ABCDEF0123456789abcdef",
            "sess_0123456789abcdef0123456789abcdeg",
            "0123456789abcdef0123456789abcdef",
            "art_0123456789abcdef0123456789abcdef",
            "{01234567-89ab-cdef-0123-456789abcdef}",
            "urn:uuid:01234567-89ab-cdef-0123-456789abcdef",
            "sess_01234567-89ab-cdef-0123-456789abcdef",
        ] {
            let err = SessionId::parse(bad).err();
            assert_eq!(
                err.map(|e| e.code),
                Some(ErrorCode::InvalidArgument),
                "{bad}"
            );
        }
    }

    #[test]
    fn project_and_slot_charset_and_length() {
        assert!(ProjectKey::parse("team/alpha-1.x_y").is_ok());
        assert!(ProjectKey::parse("").is_err());
        assert!(ProjectKey::parse("has space").is_err());
        assert!(ProjectKey::parse("é").is_err());
        assert!(ProjectKey::parse(&"a".repeat(128)).is_ok());
        assert!(ProjectKey::parse(&"a".repeat(129)).is_err());
        assert!(SlotName::parse(&"s".repeat(64)).is_ok());
        assert!(SlotName::parse(&"s".repeat(65)).is_err());
    }

    #[test]
    fn the_tracer_project_is_reserved_for_callers() {
        assert!(ProjectKey::parse_for_caller("_mcp").is_err());
        assert!(ProjectKey::parse_for_caller("_mcp2").is_ok());
        assert!(
            ProjectKey::parse("_mcp").is_ok(),
            "stored rows still read back"
        );
    }

    #[test]
    fn client_key_must_not_be_blank_and_counts_chars() {
        assert!(ClientKey::parse("client_key", " \t").is_err());
        assert!(ClientKey::parse("client_key", &"漢".repeat(200)).is_ok());
        assert!(ClientKey::parse("client_key", &"漢".repeat(201)).is_err());
    }
}

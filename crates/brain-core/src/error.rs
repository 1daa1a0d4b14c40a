//! The SPEC's error codes (§3.1 and the tool sections) and the domain error.

use serde::Serialize;
use serde_json::{Value, json};

/// Every error code a caller can see, with its HTTP-like status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    Unauthenticated,
    Forbidden,
    SessionNotFound,
    NotFound,
    ClientKeyMismatch,
    SessionClosed,
    TracerSession,
    InvalidArgument,
    ConfirmRequired,
    RateLimited,
    PayloadTooLarge,
    Internal,
    AlreadyBound,
    DocumentConflict,
    RelayRequiresSlot,
    FocusShrinkOverrideRefused,
    BaseFocusShrink,
    SlotFocusShrink,
    QuotaExceeded,
}

impl ErrorCode {
    /// Every code, for the documentation's check (`tests/docs.rs`).
    pub const ALL: &'static [ErrorCode] = &[
        Self::Unauthenticated,
        Self::Forbidden,
        Self::SessionNotFound,
        Self::NotFound,
        Self::ClientKeyMismatch,
        Self::SessionClosed,
        Self::TracerSession,
        Self::InvalidArgument,
        Self::ConfirmRequired,
        Self::RateLimited,
        Self::PayloadTooLarge,
        Self::Internal,
        Self::AlreadyBound,
        Self::DocumentConflict,
        Self::RelayRequiresSlot,
        Self::FocusShrinkOverrideRefused,
        Self::BaseFocusShrink,
        Self::SlotFocusShrink,
        Self::QuotaExceeded,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unauthenticated => "unauthenticated",
            Self::Forbidden => "forbidden",
            Self::SessionNotFound => "session_not_found",
            Self::NotFound => "not_found",
            Self::ClientKeyMismatch => "client_key_mismatch",
            Self::SessionClosed => "session_closed",
            Self::TracerSession => "tracer_session",
            Self::InvalidArgument => "invalid_argument",
            Self::ConfirmRequired => "confirm_required",
            Self::RateLimited => "rate_limited",
            Self::PayloadTooLarge => "payload_too_large",
            Self::Internal => "internal",
            Self::AlreadyBound => "already_bound",
            Self::DocumentConflict => "document_conflict",
            Self::RelayRequiresSlot => "relay_requires_slot",
            Self::FocusShrinkOverrideRefused => "focus_shrink_override_refused",
            Self::BaseFocusShrink => "base_focus_shrink",
            Self::SlotFocusShrink => "slot_focus_shrink",
            Self::QuotaExceeded => "quota_exceeded",
        }
    }

    /// The HTTP-like status of SPEC §3.1 and §2.
    pub const fn status(self) -> u16 {
        match self {
            Self::Unauthenticated => 401,
            Self::Forbidden | Self::FocusShrinkOverrideRefused => 403,
            Self::SessionNotFound | Self::NotFound => 404,
            Self::ClientKeyMismatch
            | Self::SessionClosed
            | Self::TracerSession
            | Self::AlreadyBound
            | Self::DocumentConflict
            | Self::RelayRequiresSlot
            | Self::BaseFocusShrink
            | Self::SlotFocusShrink => 409,
            Self::PayloadTooLarge => 413,
            Self::InvalidArgument => 422,
            Self::ConfirmRequired => 428,
            Self::RateLimited => 429,
            Self::Internal => 500,
            Self::QuotaExceeded => 507,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal in domain words. `message` is one sentence that tells the caller
/// what to do next; `details` carries machine-readable facts (never internals).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct DomainError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Value,
}

impl DomainError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Value::Object(Default::default()),
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    pub fn invalid_argument(field: &str, problem: impl std::fmt::Display) -> Self {
        Self::new(
            ErrorCode::InvalidArgument,
            format!("{field} {problem}; fix the argument and call again"),
        )
        .with_details(json!({ "field": field }))
    }

    pub fn session_not_found() -> Self {
        Self::new(
            ErrorCode::SessionNotFound,
            "no such session in this tenant; check the session_id or start a new session",
        )
    }

    /// A write whose commit was sent but not answered (the connection broke):
    /// whether it took effect is unknown, and the caller is told so.
    pub fn outcome_unknown() -> Self {
        Self::new(
            ErrorCode::Internal,
            "the server lost its database connection while committing this write, so it may or may not have been applied; read before writing again (an end, relay or abandon repeated with the same arguments is answered from what was stored)",
        )
        .with_details(json!({"outcome": "unknown"}))
    }

    /// The most projects a tenant may hold (migration 0014's trigger).
    pub const MAX_PROJECTS_PER_TENANT: i64 = 10_000;

    /// A write that would create a project past the tenant's bound.
    pub fn project_cap() -> Self {
        Self::new(
            ErrorCode::QuotaExceeded,
            format!(
                "this tenant holds {} projects, the most it may; work in an existing project, or have an operator delete one",
                Self::MAX_PROJECTS_PER_TENANT
            ),
        )
        .with_details(json!({"quota": "projects", "limit": Self::MAX_PROJECTS_PER_TENANT}))
    }

    /// A write that would take the tenant's stored bytes past its quota
    /// (migration 0015's triggers); `usage` and `quota` when known.
    pub fn quota_exceeded(usage: Option<i64>, quota: Option<i64>) -> Self {
        let said = match (usage, quota) {
            (Some(u), Some(q)) => format!(" (it holds {u} of {q} bytes)"),
            _ => String::new(),
        };
        Self::new(
            ErrorCode::QuotaExceeded,
            format!(
                "this write would take the tenant past its storage quota{said}; nothing was written. Reads, acknowledgements, abandons with a short reason and ends that keep the focus as it is (next_focus equal to the current focus) with a short summary (at most 1 KiB of summary and reasons) still work; ask an operator to raise the quota or delete old projects"
            ),
        )
        .with_details(json!({"quota": "bytes", "usage": usage, "limit": quota}))
    }

    /// A failure the caller cannot fix. The cause is logged by the server, never sent.
    pub fn internal() -> Self {
        Self::new(
            ErrorCode::Internal,
            "the server failed to complete the call; nothing was written, retry later",
        )
    }
}

/// Errors a store can raise: a domain refusal, or an infrastructure failure
/// whose text stays on the server.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Domain(#[from] DomainError),
    #[error("storage failure: {0}")]
    Backend(String),
    /// The database driver failed; the driver's error is kept as the source,
    /// so the server's log can tell the whole chain.
    #[error("storage failure: {0}")]
    Driver(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// A merging end found its revision stale, or the focus moved since its
    /// merge: nothing was written. Never leaves the store: its caller merges
    /// onto `current` and closes again (`SessionWrites::end_session`).
    #[error("the focus moved; merge again")]
    MergeNeeded(Box<MergeNeeded>),
}

/// What a merging end needs to merge again.
#[derive(Debug)]
pub struct MergeNeeded {
    /// The body the session read (its expected revision's), on the first stop.
    pub base: Option<String>,
    /// The focus as it stands.
    pub current: crate::model::Focus,
    /// Which focus that is: the session's bound slot, or the base focus.
    pub target: Option<crate::ids::SlotName>,
}

impl StoreError {
    pub fn backend(e: impl std::fmt::Display) -> Self {
        Self::Backend(e.to_string())
    }

    /// A driver's failure, kept whole as this error's source.
    pub fn driver(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Driver(Box::new(e))
    }

    /// This error and each of its causes, as one line for the server's log.
    pub fn chain(&self) -> String {
        let mut line = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            let text = c.to_string();
            // A cause this error's own text already quotes is said once.
            if !line.ends_with(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = c.source();
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the connection was reset")]
    struct Reset(#[source] std::io::Error);

    #[test]
    fn a_driver_error_keeps_its_causes() {
        let broken = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe");
        let e = StoreError::driver(Reset(broken));
        assert_eq!(
            e.chain(),
            "storage failure: the connection was reset: broken pipe"
        );
        assert_eq!(e.to_string(), "storage failure: the connection was reset");
    }

    /// ALL holds every code, each once: a new code fails to compile here
    /// until it has its place, and then fails until ALL holds it there.
    #[test]
    fn all_holds_every_code() {
        let place = |c: ErrorCode| match c {
            ErrorCode::Unauthenticated => 0,
            ErrorCode::Forbidden => 1,
            ErrorCode::SessionNotFound => 2,
            ErrorCode::NotFound => 3,
            ErrorCode::ClientKeyMismatch => 4,
            ErrorCode::SessionClosed => 5,
            ErrorCode::TracerSession => 6,
            ErrorCode::InvalidArgument => 7,
            ErrorCode::ConfirmRequired => 8,
            ErrorCode::RateLimited => 9,
            ErrorCode::PayloadTooLarge => 10,
            ErrorCode::Internal => 11,
            ErrorCode::AlreadyBound => 12,
            ErrorCode::DocumentConflict => 13,
            ErrorCode::RelayRequiresSlot => 14,
            ErrorCode::FocusShrinkOverrideRefused => 15,
            ErrorCode::BaseFocusShrink => 16,
            ErrorCode::SlotFocusShrink => 17,
            ErrorCode::QuotaExceeded => 18,
        };
        assert_eq!(ErrorCode::ALL.len(), 19);
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(place(*code), i, "{code}");
        }
    }

    #[test]
    fn statuses_follow_the_spec() {
        assert_eq!(ErrorCode::SessionNotFound.status(), 404);
        assert_eq!(ErrorCode::ClientKeyMismatch.status(), 409);
        assert_eq!(ErrorCode::SessionClosed.status(), 409);
        assert_eq!(ErrorCode::TracerSession.status(), 409);
        assert_eq!(ErrorCode::InvalidArgument.status(), 422);
        assert_eq!(ErrorCode::ConfirmRequired.status(), 428);
        assert_eq!(ErrorCode::FocusShrinkOverrideRefused.status(), 403);
        assert_eq!(ErrorCode::BaseFocusShrink.status(), 409);
        assert_eq!(ErrorCode::SlotFocusShrink.status(), 409);
        assert_eq!(ErrorCode::RelayRequiresSlot.status(), 409);
        assert_eq!(ErrorCode::PayloadTooLarge.status(), 413);
    }

    #[test]
    fn codes_serialize_as_their_names() {
        for code in [
            ErrorCode::BaseFocusShrink,
            ErrorCode::FocusShrinkOverrideRefused,
        ] {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(Value::String(code.as_str().into()))
            );
        }
    }
}

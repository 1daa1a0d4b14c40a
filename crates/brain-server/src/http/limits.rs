//! What keeps one caller from exhausting the server (SPEC §4): request bodies,
//! request ids, a per-credential token bucket on /mcp, a cap on open MCP
//! connections per credential and on the `initialize` parameters kept for each.
//! Every limit is keyed by tenant *and* credential, never by subject alone, and
//! runs after authentication.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::{HeaderValue, StatusCode};

use super::{AppState, MAX_BODY_BYTES, error_response};
use crate::auth::Principal;

/// The server keeps at most this much of a connection's `initialize`
/// parameters (larger → 413, nothing kept).
pub const MAX_INIT_PARAMS_BYTES: usize = 16 * 1024;

/// The settings of SPEC §7 that bound each credential.
#[derive(Debug, Clone, Copy)]
pub struct LimitSettings {
    /// `BRAIN_RATE_LIMIT_PER_SEC`: token bucket refill on /mcp; burst is twice
    /// this. 0 turns the limit off.
    pub rate_per_sec: u32,
    /// `BRAIN_MAX_CONNECTIONS_PER_CREDENTIAL`.
    pub max_connections_per_credential: i64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            rate_per_sec: 50,
            max_connections_per_credential: 64,
        }
    }
}

/// The limits and their per-credential state, shared by the router's layers.
pub struct Limits {
    pub settings: LimitSettings,
    mcp: Option<DefaultKeyedRateLimiter<String>>,
}

impl Limits {
    pub fn new(settings: LimitSettings) -> Arc<Self> {
        let mcp = NonZeroU32::new(settings.rate_per_sec).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::MIN.saturating_add(1));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Arc::new(Self { settings, mcp })
    }

    /// Drop the buckets of credentials that have been quiet long enough to be
    /// full again, so the limiter's memory follows active credentials only.
    pub fn forget_quiet(&self) {
        if let Some(l) = &self.mcp {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// The key every per-credential limit uses: tenant, credential kind and id.
pub fn credential_key(p: &Principal) -> String {
    format!("{}\u{1f}{}\u{1f}{}", p.tenant, p.kind, p.credential_id)
}

pub fn too_many(message: &str, retry_after: Duration) -> Response {
    let mut resp = error_response(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message);
    let secs = retry_after.as_secs_f64().ceil().max(1.0);
    if let Ok(v) = HeaderValue::from_str(&format!("{secs:.0}")) {
        resp.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    resp
}

/// The token bucket on /mcp, after authentication. A refused call is answered
/// 429 before anything else runs, so it writes no receipt.
pub async fn rate_limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (Some(limiter), Some(p)) = (&state.limits.mcp, req.extensions().get::<Principal>()) else {
        return next.run(req).await;
    };
    if let Err(not_until) = limiter.check_key(&credential_key(p)) {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        return too_many(
            "too many requests from this credential; wait for Retry-After seconds and retry",
            wait,
        );
    }
    next.run(req).await
}

pub fn payload_too_large(message: &str) -> Response {
    error_response(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", message)
}

/// Every request body is read here, up to `MAX_BODY_BYTES`; a larger one is
/// 413 in the error envelope on every route, before any handler runs.
pub async fn limit_body(req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = || payload_too_large("the request body is larger than 1 MiB");
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => return too_large(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// A request id the client sent is kept only when it is `[A-Za-z0-9._-]{1,64}`;
/// anything else is dropped (and a fresh id made), so no client text can forge
/// log fields.
pub fn request_id_ok(v: &str) -> bool {
    (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub async fn sanitize_request_id(mut req: Request, next: Next) -> Response {
    let bad = req
        .headers()
        .get_all("x-request-id")
        .iter()
        .any(|v| !v.to_str().is_ok_and(request_id_ok))
        || req.headers().get_all("x-request-id").iter().count() > 1;
    if bad {
        req.headers_mut().remove("x-request-id");
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids() {
        assert!(request_id_ok("abc-123_X.y"));
        assert!(request_id_ok(&"a".repeat(64)));
        assert!(!request_id_ok(&"a".repeat(65)));
        assert!(!request_id_ok(""));
        assert!(!request_id_ok("a b"));
        assert!(!request_id_ok("a\"b"));
        assert!(!request_id_ok("x tenant=evil"));
    }
}

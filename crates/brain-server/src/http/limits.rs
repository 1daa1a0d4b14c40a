//! What keeps one caller from exhausting the server (SPEC §4): request ids, a per-credential token bucket on /mcp, a cap on open MCP
//! connections per credential and on the `initialize` parameters kept for each.
//! Every limit is keyed by tenant *and* credential, never by subject alone, and
//! runs after authentication.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::HeaderValue;
use http_body::Body as HttpBody;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::AppState;
use crate::auth::Principal;
use crate::refusal::Refusal;
use axum::response::IntoResponse;
use brain_core::ErrorCode;

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
    /// `BRAIN_MAX_CONNECTIONS_PER_TENANT`: however many subjects a tenant's
    /// identity provider mints, its open connections stay bounded.
    pub max_connections_per_tenant: i64,
    /// `BRAIN_MAX_CONNECTIONS`: MCP connections this replica holds in memory.
    pub max_connections: usize,
    /// `BRAIN_MAX_IN_FLIGHT_PER_CREDENTIAL`: requests of one credential on
    /// /mcp at once on this replica, each until its answer's body ends (an SSE
    /// stream holds its place while open).
    pub max_in_flight_per_credential: usize,
    /// How often an open event stream asks again whether its credential
    /// still holds (a shared token not revoked); a JWT's stream ends at its
    /// `exp` whatever this is.
    pub stream_recheck: Duration,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self {
            rate_per_sec: 50,
            max_connections_per_credential: 64,
            max_connections_per_tenant: 1_024,
            max_connections: 8_192,
            max_in_flight_per_credential: 128,
            stream_recheck: Duration::from_secs(15),
        }
    }
}

/// The limits and their per-credential state, shared by the router's layers.
pub struct Limits {
    pub settings: LimitSettings,
    mcp: Option<DefaultKeyedRateLimiter<String>>,
    in_flight: InFlight,
    /// Shared-token lookups in the database at once on this replica. They
    /// run before any per-credential limit can (the credential is what they
    /// find), so without this bound anyone could keep every pooled
    /// connection busy with made-up tokens.
    lookups: Semaphore,
}

/// Shared-token lookups at once per replica (of `BRAIN_DB_POOL_SIZE`, at
/// least 2): a lookup is one indexed read, so two keep up with thousands a
/// second while leaving the rest of the pool to the calls.
pub const LOOKUPS_AT_ONCE: usize = 2;
/// How long a request waits for a lookup's place before it is answered 429.
pub const LOOKUP_WAIT: Duration = Duration::from_secs(1);

/// Each credential's places for requests in flight. An entry is made on a
/// credential's first request and dropped by [`Limits::forget_quiet`] once
/// none of its places is held, as the rate limiter's buckets are: giving a
/// place back is then only a permit's drop, with no lock.
#[derive(Default)]
struct InFlight {
    places: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl InFlight {
    /// A place for `key`'s credential, or `None` when it holds `max`.
    fn take(&self, key: String, max: usize) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
            match places.get(&key) {
                Some(s) => s.clone(),
                None => places
                    .entry(key)
                    .or_insert_with(|| Arc::new(Semaphore::new(max)))
                    .clone(),
            }
        };
        semaphore.try_acquire_owned().ok()
    }

    /// Drop the entries of credentials with no place held (only the map
    /// holds their semaphore: a taker clones it under the lock).
    fn forget_idle(&self) {
        let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
        places.retain(|_, s| Arc::strong_count(s) > 1);
        places.shrink_to_fit();
    }
}

/// A response body that holds its request's place until it ends.
struct Holding<B> {
    inner: B,
    _place: OwnedSemaphorePermit,
}

impl<B: HttpBody + Unpin> HttpBody for Holding<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Limits {
    pub fn new(settings: LimitSettings) -> Arc<Self> {
        let mcp = NonZeroU32::new(settings.rate_per_sec).map(|rate| {
            let burst = rate.saturating_mul(NonZeroU32::MIN.saturating_add(1));
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        Arc::new(Self {
            settings,
            mcp,
            in_flight: InFlight::default(),
            lookups: Semaphore::new(LOOKUPS_AT_ONCE),
        })
    }

    /// A place to look a credential up in the database, or `None` after
    /// [`LOOKUP_WAIT`] without one.
    pub async fn lookup_place(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        tokio::time::timeout(LOOKUP_WAIT, self.lookups.acquire())
            .await
            .ok()?
            .ok()
    }

    /// Drop the buckets of credentials that have been quiet long enough to be
    /// full again, so the limiter's memory follows active credentials only.
    pub fn forget_quiet(&self) {
        if let Some(l) = &self.mcp {
            l.retain_recent();
            l.shrink_to_fit();
        }
        self.in_flight.forget_idle();
    }
}

/// The key every per-credential limit uses: tenant, credential kind, id and
/// role — so a leaked agent token of an operator's subject cannot spend the
/// operator's requests or connections.
pub fn credential_key(p: &Principal) -> String {
    key_of(&p.tenant, &p.kind, &p.credential_id, &p.role)
}

/// [`credential_key`] from its parts, for a caller already past the door.
pub fn key_of(
    tenant: &impl std::fmt::Display,
    kind: &impl std::fmt::Display,
    credential_id: &str,
    role: &impl std::fmt::Display,
) -> String {
    format!("{tenant}\u{1f}{kind}\u{1f}{credential_id}\u{1f}{role}")
}

pub fn too_many(message: &str, retry_after: Duration) -> Response {
    let mut resp = Refusal::new(ErrorCode::RateLimited, message).into_response();
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

/// At most `max_in_flight_per_credential` requests of one credential at once,
/// after authentication and before the body is read: the token bucket bounds
/// how fast a credential asks, this how much it holds (sockets, bodies
/// arriving slowly, open SSE streams, which rmcp keeps many of per
/// connection). The place is held until the answer's body ends.
pub async fn in_flight(State(state): State<AppState>, req: Request, next: Next) -> Response {
    // A DELETE ends a connection and its streams, which is how a credential
    // at the cap gives places back: it never needs one.
    if req.method() == http::Method::DELETE {
        return next.run(req).await;
    }
    let Some(p) = req.extensions().get::<Principal>() else {
        return next.run(req).await;
    };
    let max = state.limits.settings.max_in_flight_per_credential.max(1);
    let Some(place) = state.limits.in_flight.take(credential_key(p), max) else {
        return too_many(
            "this credential has as many requests in flight as it may (open SSE streams \
             included); close some and retry",
            Duration::from_secs(1),
        );
    };
    let (parts, body) = next.run(req).await.into_parts();
    Response::from_parts(
        parts,
        Body::new(Holding {
            inner: body,
            _place: place,
        }),
    )
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
    use crate::http::bodies::method_too_long;

    #[test]
    fn long_method_names_are_spotted() {
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"{}"}}"#,
            "x".repeat(200)
        );
        assert!(method_too_long(long.as_bytes()));
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"x":"{}"}}}}"#,
            "y".repeat(500)
        );
        assert!(!method_too_long(ok.as_bytes()));
        assert!(!method_too_long(b"[1,2,3]"));
        let batch = format!(
            r#"[{{"jsonrpc":"2.0","id":1,"method" : "{}"}}]"#,
            "m".repeat(129)
        );
        assert!(method_too_long(batch.as_bytes()), "in a batch too");
        let escaped = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"t":"\"method\": \"{}\""}}}}"#,
            "z".repeat(300)
        );
        assert!(
            !method_too_long(escaped.as_bytes()),
            "a quoted mention is not a key"
        );
        // The key spelled with an escape, which rmcp reads as `method`.
        let spelled = format!(
            r#"{{"jsonrpc":"2.0","id":1,"metho\u0064":"{}"}}"#,
            "x".repeat(200)
        );
        assert!(method_too_long(spelled.as_bytes()), "an escaped key");
        let value = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"{}\u0078"}}"#,
            "x".repeat(200)
        );
        assert!(method_too_long(value.as_bytes()), "an escape in the value");
        assert!(!method_too_long(
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"t":"caf\u00e9 {}"}}}}"#,
                "y".repeat(300)
            )
            .as_bytes()
        ));
    }

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

    #[test]
    fn a_credentials_places_are_bounded_and_idle_entries_are_forgotten() {
        let in_flight = super::InFlight::default();
        let a = in_flight.take("a".into(), 2).expect("first");
        let b = in_flight.take("a".into(), 2).expect("second");
        assert!(
            in_flight.take("a".into(), 2).is_none(),
            "a third while two are held"
        );
        let other = in_flight.take("b".into(), 2).expect("another credential");
        drop(a);
        let c = in_flight.take("a".into(), 2).expect("one given back");
        drop(other);
        in_flight.forget_idle();
        let left: Vec<String> = in_flight.places.lock().unwrap().keys().cloned().collect();
        assert_eq!(left, ["a"], "only the credential holding places is kept");
        drop((b, c));
        in_flight.forget_idle();
        assert!(in_flight.places.lock().unwrap().is_empty());
    }
}

//! An event stream lasts only while the credential that opened it holds.
//! A credential is checked once per request, and an SSE response is one
//! request that can stay open for as long as its connection (30 min): a
//! revoked shared token or an expired JWT kept hearing `resources/updated`
//! until then. Each stream now ends at its JWT's `exp`, and a shared token's
//! stream asks every `LimitSettings::stream_recheck` whether the token was
//! revoked. A `subscriptions/listen` stream (protocol 2026-07-28) is the
//! answer to a POST, which this layer lets finish; the listen handler ends
//! it itself with the request's [`CredentialWatch`].

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use brain_core::store::Store;
use http_body::Body as HttpBody;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::AppState;
use crate::auth::Principal;

/// How to tell when the request's credential stops holding, for a handler
/// whose answer outlives it (`subscriptions/listen`): put in every
/// authenticated request's extensions by the front door.
#[derive(Clone)]
pub struct CredentialWatch {
    store: Arc<dyn Store>,
    valid_until: Option<i64>,
    shared_token_hash: Option<String>,
    recheck: Duration,
}

/// A running [`CredentialWatch`]: `lapsed` is cancelled once the credential
/// no longer holds; the watching task ends when this is dropped.
pub struct Watching {
    pub lapsed: CancellationToken,
    _watch: AbortOnDrop,
}

impl CredentialWatch {
    pub fn new(state: &AppState, principal: &Principal, shared_token_hash: Option<String>) -> Self {
        Self {
            store: state.store.clone(),
            valid_until: principal.valid_until,
            shared_token_hash,
            recheck: state.limits.settings.stream_recheck,
        }
    }

    /// Start watching; `None` for a credential that never lapses.
    pub fn start(&self) -> Option<Watching> {
        if self.valid_until.is_none() && self.shared_token_hash.is_none() {
            return None;
        }
        let lapsed = CancellationToken::new();
        let watch = tokio::spawn(watch(
            self.store.clone(),
            self.valid_until,
            self.shared_token_hash.clone(),
            self.recheck,
            lapsed.clone(),
        ));
        Some(Watching {
            lapsed,
            _watch: AbortOnDrop(watch),
        })
    }
}

/// `resp`, ended when the credential `watch` follows stops holding, if it is
/// an event stream.
pub fn while_credential_holds(watch: &CredentialWatch, resp: Response) -> Response {
    let streaming = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let Some(watching) = streaming.then(|| watch.start()).flatten() else {
        return resp;
    };
    resp.map(|inner| {
        Body::new(UntilEnded {
            inner,
            ended: Box::pin(watching.lapsed.clone().cancelled_owned()),
            _watching: watching,
        })
    })
}

/// Cancel `ended` once the credential no longer holds.
async fn watch(
    store: Arc<dyn Store>,
    valid_until: Option<i64>,
    shared_token_hash: Option<String>,
    recheck: Duration,
    ended: CancellationToken,
) {
    loop {
        let now = chrono::Utc::now().timestamp();
        let wait = match valid_until {
            Some(until) if until <= now => break,
            Some(until) => recheck.min(Duration::from_secs(until.abs_diff(now))),
            None => recheck,
        };
        tokio::time::sleep(wait.max(Duration::from_millis(100))).await;
        if let Some(hash) = &shared_token_hash
            && !still_live(store.as_ref(), hash, recheck).await
        {
            break;
        }
    }
    metrics::counter!("brain_streams_ended_by_credential_total").increment(1);
    ended.cancel();
}

/// Whether a shared token is still live. The streams of one token (a fleet
/// holds many) share one lookup per half recheck interval, so open streams
/// ask the database about as often as one client would.
async fn still_live(store: &dyn Store, hash: &str, recheck: Duration) -> bool {
    type Seen = std::collections::HashMap<String, (std::time::Instant, bool)>;
    static SEEN: std::sync::LazyLock<std::sync::Mutex<Seen>> =
        std::sync::LazyLock::new(Default::default);
    let fresh = recheck / 2;
    let known = SEEN.lock().ok().and_then(|m| {
        m.get(hash)
            .filter(|(at, _)| at.elapsed() < fresh)
            .map(|(_, live)| *live)
    });
    if let Some(live) = known {
        return live;
    }
    // A failed lookup is not a revocation: the next one decides.
    let live = !matches!(store.shared_token_find(hash).await, Ok(None));
    if let Ok(mut m) = SEEN.lock() {
        if m.len() >= 4_096 {
            m.retain(|_, (at, _)| at.elapsed() < fresh);
            if m.len() >= 4_096 {
                m.clear();
            }
        }
        m.insert(hash.to_owned(), (std::time::Instant::now(), live));
    }
    live
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A body that ends (cleanly, as a stream the server closed) once `ended` is.
struct UntilEnded {
    inner: Body,
    ended: Pin<Box<WaitForCancellationFutureOwned>>,
    _watching: Watching,
}

impl HttpBody for UntilEnded {
    type Data = <Body as HttpBody>::Data;
    type Error = <Body as HttpBody>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.ended.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

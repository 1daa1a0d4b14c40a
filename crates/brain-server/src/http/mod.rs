//! The front door's HTTP surface (SPEC §4): routes, layers and shared state.
//!
//! Request flow for /mcp: security headers and tracing → Host/Origin guard →
//! bearer authentication → connection binding → rmcp's Streamable HTTP service
//! (1 MiB body limit, enforced while streaming) → `BrainMcp` → store.

mod admin;
mod authn;
mod bodies;
mod connections;
mod console;
mod guard;
pub mod limits;
pub mod meta;
pub mod probes;
mod restore;
pub(crate) mod streams;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use brain_core::store::Store;
use http::{HeaderName, HeaderValue};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use admin::limiter as admin_limiter;
pub use guard::{host_allowed, origin_allowed};
pub use restore::InitParams;

use crate::auth::Authenticator;
use crate::mcp::BrainMcp;
use crate::refusal::Refusal;
use brain_core::ErrorCode;

/// Request bodies above this are refused with 413 (SPEC §3.2).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// What every route shares. Each middleware layer and handler takes its own
/// copy of the state per request (about ten per MCP call), so it is one `Arc`:
/// a copy is one reference count, not seven and a `String`.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl std::ops::Deref for AppState {
    type Target = AppParts;
    fn deref(&self) -> &AppParts {
        &self.0
    }
}

impl From<AppParts> for AppState {
    fn from(parts: AppParts) -> Self {
        AppState(Arc::new(parts))
    }
}

/// The parts of [`AppState`].
pub struct AppParts {
    pub store: Arc<dyn Store>,
    pub auth: Arc<Authenticator>,
    pub public_url: String,
    pub allowed_hosts: Arc<Vec<String>>,
    pub allowed_origins: Arc<Vec<String>>,
    /// Initialize parameters handed between the database and rmcp (see `restore`).
    pub init_params: InitParams,
    /// `BRAIN_ELEVATION_MAX_SECS`.
    pub elevation_max_secs: i64,
    pub admin_limiter: admin::Limiter,
    /// Per-credential limits on /mcp (SPEC §4).
    pub limits: Arc<limits::Limits>,
    /// `/readyz` and `/metrics`, asked of the store one at a time.
    pub probes: probes::Probes,
}

/// What the router needs beyond the state.
pub struct HttpOptions {
    /// How long rmcp keeps an unused MCP connection.
    pub connection_idle: Duration,
    /// Cancelled on shutdown: ends MCP connections and their streams.
    pub shutdown: CancellationToken,
    /// Serve `GET /metrics` on this router (false when it has a listener of its own).
    pub metrics: bool,
    /// `BRAIN_TOOL_PROFILES`.
    pub profiles: crate::profiles::Profiles,
}

/// A router with only `GET /metrics`, for `BRAIN_METRICS_LISTEN`.
pub fn metrics_router(state: AppState) -> Router {
    Router::new()
        .route("/metrics", get(crate::metrics::scrape))
        .with_state(state)
}

/// The whole front door. One chain of routes and layers, longer than 80
/// lines: axum applies layers outside-in, so the order a request meets them
/// is read from this one place.
pub fn router(state: AppState, opts: HttpOptions) -> Router {
    // Install the recorder before anything records.
    let _ = crate::metrics::handle();
    let handler = BrainMcp::with_profiles(state.store.clone(), opts.profiles);
    handler.watch_focus(opts.shutdown.clone());
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(opts.connection_idle);
    let sessions = Arc::new(sessions);
    let registry = connections::Registry {
        app: state.clone(),
        sessions: sessions.clone(),
        known: Default::default(),
        subscriptions: handler.subscriptions(),
    };
    tokio::spawn(sweep(
        registry.clone(),
        opts.connection_idle,
        opts.profiles.has(crate::profiles::Profile::Aziel),
        opts.shutdown.clone(),
    ));
    // Host and Origin are checked by our own guard (before authentication);
    // rmcp's copy of the check is switched off so there is one rule, not two.
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(opts.shutdown.child_token())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    config.session_store = Some(Arc::new(state.init_params.clone()));
    let mcp = StreamableHttpService::new(move || Ok(handler.clone()), sessions, config);
    let mcp = ServiceBuilder::new()
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::host_and_origin,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authn::require_credential,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::rate_limit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::in_flight,
        ))
        .layer(axum::middleware::from_fn(bodies::read_body))
        .layer(axum::middleware::from_fn_with_state(
            registry,
            connections::bind,
        ))
        .layer(axum::middleware::from_fn(bodies::envelope_errors))
        .service(mcp);

    let admin = admin::routes()
        // The console's reads spend the credential's /mcp token bucket.
        .merge(console::api().layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::rate_limit,
        )))
        .layer(axum::middleware::from_fn(bodies::read_body))
        // As on /mcp: a credential holds at most its in-flight places while
        // bodies arrive, whatever its role (the routes check it after).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::in_flight,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authn::require_credential,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::host_and_origin,
        ));

    let mut router = Router::new();
    if opts.metrics {
        // On the front door it is guarded as every page is (a scraper names an
        // allowed host); BRAIN_METRICS_LISTEN's own listener is for the
        // internal network and has no guard.
        router = router.route(
            "/metrics",
            get(crate::metrics::scrape).layer(axum::middleware::from_fn_with_state(
                state.clone(),
                guard::host_and_origin,
            )),
        );
    }
    router
        .merge(admin)
        .merge(
            console::assets().layer(axum::middleware::from_fn_with_state(
                state.clone(),
                guard::host_and_origin,
            )),
        )
        .route("/healthz", get(meta::live))
        .route("/readyz", get(meta::ready))
        .route(
            "/.well-known/oauth-protected-resource",
            get(meta::resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(meta::resource_metadata),
        )
        .route_service("/mcp", mcp)
        .fallback(|| async { Refusal::new(ErrorCode::NotFound, "no such route") })
        .layer(axum::middleware::from_fn(bodies::limit_declared_body))
        .layer(axum::middleware::from_fn(bodies::close_after_refusal))
        .layer(axum::middleware::from_fn(security_headers))
        .layer(axum::middleware::from_fn(crate::metrics::track_http))
        .layer(TraceLayer::new_for_http().make_span_with(meta::span_for))
        // Outermost: every request gets an id before its span is made; rmcp hands
        // the request's headers to the tool, which logs the same id.
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        // Before an id is kept, it must be one that cannot forge log fields.
        .layer(axum::middleware::from_fn(limits::sanitize_request_id))
        .with_state(state)
}

/// The expiry sweep (SPEC §4): connections unused past the idle limit are
/// closed in the database (with their tracer sessions) by whichever replica
/// comes first, and forgotten in this process; with the `aziel` profile, raw
/// runtime sessions unused for 6 h are closed; quiet rate-limit buckets,
/// stale restore hand-offs and subscriptions of closed transports are dropped.
async fn sweep(
    registry: connections::Registry,
    idle: Duration,
    runtime_sessions: bool,
    stop: CancellationToken,
) {
    let every = (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        match registry.app.store.connection_expire().await {
            Ok(closed) => {
                for (_, id) in &closed {
                    registry.forget(id).await;
                }
                if !closed.is_empty() {
                    tracing::info!(count = closed.len(), "expired idle MCP connections");
                }
            }
            Err(e) => tracing::warn!(error = %e, "connection expiry sweep failed"),
        }
        if runtime_sessions {
            let lifetime = crate::tools::profiles::aziel::RUNTIME_SESSION_SECS;
            match registry.app.store.runtime_expire(lifetime).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(count = n, "expired raw runtime sessions"),
                Err(e) => tracing::warn!(error = %e, "runtime session expiry failed"),
            }
        }
        registry.subscriptions.prune_closed();
        registry.app.init_params.prune();
        registry.app.limits.forget_quiet();
        registry.app.admin_limiter.retain_recent();
    }
}

/// Security headers on every response (SPEC §4).
async fn security_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-resource-policy", "same-origin"),
    ] {
        h.entry(HeaderName::from_static(name))
            .or_insert(HeaderValue::from_static(value));
    }
    resp
}

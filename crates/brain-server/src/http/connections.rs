//! The MCP connection registry (SPEC §1 MCP connection): every `Mcp-Session-Id`
//! is bound to the tenant, credential and role that initialized it. Any request
//! carrying an id that is unknown, closed, or another credential's (or
//! another role's) is answered 404 and never reaches rmcp.
//!
//! It also bounds what a new connection may cost: at most
//! `BRAIN_MAX_CONNECTIONS_PER_CREDENTIAL` open ones per credential (429), at
//! most 16 KiB of `initialize` parameters kept (413), and rmcp's in-memory state
//! is dropped again when the database refuses to record the connection.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::Value;

use super::bodies::payload_too_large;
use super::limits::{MAX_INIT_PARAMS_BYTES, too_many};
use super::{AppState, MAX_BODY_BYTES};
use crate::auth::{Principal, Tracer};
use crate::refusal::Refusal;
use brain_core::error::{ErrorCode, StoreError};
use brain_core::flow::over_cap;
use brain_core::store::{ConnectionCaps, ConnectionRecord};

const SESSION_HEADER: &str = "mcp-session-id";

/// The registry's state: the app's, and rmcp's in-memory connections.
#[derive(Clone)]
pub struct Registry {
    pub app: AppState,
    pub sessions: Arc<LocalSessionManager>,
    pub known: Known,
    /// Resource subscriptions die with their connection.
    pub subscriptions: Arc<crate::mcp::subscriptions::Subscriptions>,
}

/// How long this replica trusts its memory of an open connection before it
/// asks the database again: a close on another replica (DELETE, expiry) stops
/// the connection here within this much.
const KNOWN_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// Connections this replica has recently seen open, by id. A binding never
/// changes, so within `KNOWN_FOR` a request needs no database round trip;
/// bounded by the replica's connection cap.
#[derive(Clone, Default)]
pub struct Known {
    inner: Arc<
        std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, ConnectionRecord)>>,
    >,
}

impl Known {
    fn with<R>(
        &self,
        f: impl FnOnce(
            &mut std::collections::HashMap<String, (std::time::Instant, ConnectionRecord)>,
        ) -> R,
    ) -> R {
        match self.inner.lock() {
            Ok(mut g) => f(&mut g),
            Err(p) => f(&mut p.into_inner()),
        }
    }

    fn get(&self, id: &str) -> Option<ConnectionRecord> {
        self.with(|m| {
            m.get(id)
                .filter(|(at, _)| at.elapsed() < KNOWN_FOR)
                .map(|(_, c)| c.clone())
        })
    }

    fn put(&self, id: &str, record: ConnectionRecord, cap: usize) {
        self.with(|m| {
            if m.len() >= cap.max(1) {
                m.retain(|_, (at, _)| at.elapsed() < KNOWN_FOR);
                if m.len() >= cap.max(1) {
                    m.clear();
                }
            }
            m.insert(id.to_owned(), (std::time::Instant::now(), record));
        });
    }

    fn drop_id(&self, id: &str) {
        self.with(|m| m.remove(id));
    }
}

/// How many new connections this process records at once (above).
static OPENING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

impl Registry {
    /// Forget a connection in this process: rmcp's worker, the kept
    /// initialize parameters and the remembered binding.
    pub async fn forget(&self, id: &str) {
        self.known.drop_id(id);
        self.subscriptions.forget(id);
        self.app.init_params.forget(id);
        let id: Arc<str> = Arc::from(id);
        if let Err(e) = self.sessions.close_session(&id).await {
            tracing::debug!(error = %e, "closing an expired MCP connection in memory");
        }
    }
}

/// Retry-After of a refused `initialize`: connections free up as they
/// expire or are closed.
const CAP_RETRY: std::time::Duration = std::time::Duration::from_secs(60);

fn caps(state: &AppState) -> ConnectionCaps {
    ConnectionCaps {
        per_credential: state.limits.settings.max_connections_per_credential,
        per_tenant: state.limits.settings.max_connections_per_tenant,
    }
}

fn not_found() -> Response {
    Refusal::new(
        ErrorCode::SessionNotFound,
        "unknown MCP session; initialize a new connection",
    )
    .into_response()
}

fn unavailable() -> Response {
    Refusal::new(
        ErrorCode::Internal,
        "the connection registry is unavailable; retry later",
    )
    .with_status(StatusCode::SERVICE_UNAVAILABLE)
    .into_response()
}

/// The `initialize` parameters in a request body, when the body is an
/// initialize request (alone or in a batch): their serialized size, and whether
/// every string in them is clean text.
///
/// Parsed when the body holds the bytes `"initialize"` or any `\u` escape:
/// only an escape can spell a letter of the method's name otherwise
/// (`"initializ\u0065"`, which rmcp decodes to the same method, passed a test
/// for the bytes alone). Sessionless calls of the newer protocol revision
/// come here too, and most carry neither.
fn initialize_params(body: &[u8]) -> Option<(usize, Result<(), brain_core::DomainError>)> {
    let named = body.windows(12).any(|w| w == b"\"initialize\"");
    if !named && !body.windows(2).any(|w| w == b"\\u") {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    let is_init = |m: &Value| m.get("method").and_then(Value::as_str) == Some("initialize");
    let params = match &v {
        Value::Array(items) => items.iter().find(|m| is_init(m))?.get("params"),
        m if is_init(m) => m.get("params"),
        _ => return None,
    };
    let Some(params) = params else {
        return Some((0, Ok(())));
    };
    let len = serde_json::to_vec(params).map_or(usize::MAX, |b| b.len());
    Some((len, brain_core::text::check_json("params", params)))
}

/// The front door's hold on MCP connections: a request naming one is let
/// through only for the credential and role that opened it (a DELETE closes
/// it); an `initialize` is checked against the caps before rmcp sees it, and
/// the connection rmcp opens is recorded before it is answered.
pub async fn bind(State(reg): State<Registry>, req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return Refusal::new(ErrorCode::Unauthenticated, "authentication required").into_response();
    };
    let presented = req
        .headers()
        .get(SESSION_HEADER)
        .map(|v| v.to_str().map(str::to_owned));
    match presented {
        Some(Err(_)) => not_found(),
        Some(Ok(id)) => known_connection(&reg, &principal, id, req, next).await,
        None if req.method() == Method::DELETE => not_found(),
        None => new_connection(&reg, &principal, req, next).await,
    }
}

/// A request on connection `id`: admitted ([`admit`]), run, and a DELETE
/// that rmcp took closes the connection for every replica.
async fn known_connection(
    reg: &Registry,
    principal: &Principal,
    id: String,
    mut req: Request,
    next: Next,
) -> Response {
    if let Err(refused) = admit(reg, principal, &id, &mut req).await {
        return refused;
    }
    let is_delete = req.method() == Method::DELETE;
    let resp = next.run(req).await;
    if is_delete && resp.status().is_success() {
        reg.forget(&id).await;
        if let Err(e) = reg.app.store.connection_close(&principal.tenant, &id).await {
            tracing::error!(error = %e, "could not record a closed connection");
        }
        // The connection is gone and there is nothing to say: 204.
        return StatusCode::NO_CONTENT.into_response();
    }
    resp
}

/// Whether connection `id` is open and the caller's (tenant, credential and
/// role); if so the request carries its tracer, and rmcp may restore it.
async fn admit(
    reg: &Registry,
    principal: &Principal,
    id: &str,
    req: &mut Request,
) -> Result<(), Response> {
    let state = &reg.app;
    // Remembered from the last lookup in the database, not renewed by use: a
    // connection in constant use is still checked again once `KNOWN_FOR`
    // has passed, so a close elsewhere reaches it.
    let remembered = reg.known.get(id);
    let from_memory = remembered.is_some();
    let looked_up = match remembered {
        Some(c) => Ok(Some(c)),
        None => state.store.connection_get(&principal.tenant, id).await,
    };
    match looked_up {
        Ok(Some(c))
            if !c.closed
                && c.tenant == principal.tenant
                && c.credential_kind == principal.kind
                && c.credential_id == principal.credential_id
                && c.role == principal.role =>
        {
            // Lets rmcp restore a connection another replica initialized;
            // only when this process does not hold it, so the hand-off map
            // holds in-flight restores only.
            if let Some(params) = &c.init_params {
                let key: Arc<str> = Arc::from(id);
                if !reg.sessions.has_session(&key).await.unwrap_or(false) {
                    state.init_params.remember_json(id, params);
                }
            }
            if let Some(t) = c.tracer_session {
                req.extensions_mut().insert(Tracer(t));
            }
            if !from_memory {
                reg.known.put(id, c, state.limits.settings.max_connections);
            }
            Ok(())
        }
        Ok(Some(c)) if c.closed => {
            // Closed elsewhere (DELETE on another replica, expiry): this
            // process forgets it too.
            reg.forget(id).await;
            Err(not_found())
        }
        Ok(_) => Err(not_found()),
        Err(e) => {
            tracing::error!(error = %e, "connection lookup failed");
            Err(unavailable())
        }
    }
}

/// A request that names no connection: an `initialize` is checked
/// ([`check_initialize`]) before rmcp runs it, and the connection it opens
/// is recorded ([`record`]) before the client hears of it.
async fn new_connection(
    reg: &Registry,
    principal: &Principal,
    mut req: Request,
    next: Next,
) -> Response {
    if req.method() == Method::POST {
        let (parts, body) = req.into_parts();
        // The body was already read (and bounded) by `read_body`.
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
            return payload_too_large("the request body is larger than 1 MiB");
        };
        if let Err(refused) = check_initialize(reg, principal, &bytes).await {
            return refused;
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let resp = next.run(req).await;
    // rmcp answers a successful initialize with the new connection's id.
    let new_id = resp
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match new_id {
        Some(id) => match record(reg, principal, id).await {
            Ok(()) => resp,
            Err(refused) => refused,
        },
        None => resp,
    }
}

/// An `initialize`'s parameters bounded and clean, and room for one more
/// connection: in this process, for the credential and for the tenant.
async fn check_initialize(
    reg: &Registry,
    principal: &Principal,
    body: &[u8],
) -> Result<(), Response> {
    let Some((len, clean)) = initialize_params(body) else {
        return Ok(());
    };
    if len > MAX_INIT_PARAMS_BYTES {
        return Err(payload_too_large(
            "initialize parameters are larger than 16 KiB; send fewer capabilities or less client metadata",
        ));
    }
    if let Err(e) = clean {
        return Err(Refusal::new(ErrorCode::InvalidArgument, e.message).into_response());
    }
    let state = &reg.app;
    let held = reg.sessions.sessions.read().await.len();
    if held >= state.limits.settings.max_connections {
        return Err(too_many(
            "this server holds as many MCP connections as it may; retry later",
            std::time::Duration::from_secs(60),
        ));
    }
    let counted = state
        .store
        .connection_open_count(
            &principal.tenant,
            principal.kind,
            &principal.credential_id,
            principal.role,
        )
        .await;
    match counted {
        Ok((mine, all)) => match over_cap(mine, all, caps(state)) {
            Some(e) => Err(too_many(&e.message, CAP_RETRY)),
            None => Ok(()),
        },
        Err(e) => {
            tracing::error!(error = %e, "connection count failed");
            Err(unavailable())
        }
    }
}

/// Record connection `id`, which rmcp just opened, with its tracer session;
/// a connection that cannot be recorded is forgotten and refused.
async fn record(reg: &Registry, principal: &Principal, id: String) -> Result<(), Response> {
    let state = &reg.app;
    let caller = principal.caller(Some(id.clone()));
    let params = state.init_params.take_json(&id);
    let caps = caps(state);
    // In a task of its own: a client that drops its initialize while the
    // connection is recorded must not leave rmcp holding a connection the
    // database never counted.
    let recorder = reg.clone();
    let recorded = tokio::spawn(async move {
        // Few at a time: each holds a pooled connection while it waits for
        // its tenant's claim, and a burst of one tenant's initializes must
        // not take the whole pool.
        let _turn = OPENING.acquire().await;
        let opened = recorder
            .app
            .store
            .connection_open(&caller, &id, params, caps)
            .await;
        if opened.is_err() {
            // Nothing of an unrecorded connection stays in memory.
            recorder.forget(&id).await;
        }
        opened
    })
    .await
    .unwrap_or_else(|_| {
        Err(StoreError::Backend(
            "recording a connection ended abnormally".into(),
        ))
    });
    match recorded {
        Ok(()) => Ok(()),
        // Another initialize took the last place since the count above.
        Err(StoreError::Domain(d)) if d.code == ErrorCode::RateLimited => {
            Err(too_many(&d.message, CAP_RETRY))
        }
        Err(e) => {
            tracing::error!(error = %e, "could not record a new connection");
            Err(unavailable())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::initialize_params;

    fn len(body: &[u8]) -> Option<usize> {
        initialize_params(body).map(|(n, _)| n)
    }

    #[test]
    fn initialize_params_are_measured_and_checked() {
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":"xxxx"}}"#;
        assert_eq!(len(init), Some(br#"{"a":"xxxx"}"#.len()));
        let batch = br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]"#;
        assert_eq!(len(batch), Some(2));
        let call =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"initialize"}}"#;
        assert_eq!(len(call), None);
        assert_eq!(len(b"not json \"initialize\""), None);
        // An escape in the method's name is the same method to rmcp.
        let escaped =
            br#"{"jsonrpc":"2.0","id":1,"method":"initializ\u0065","params":{"a":"xxxx"}}"#;
        assert_eq!(len(escaped), Some(br#"{"a":"xxxx"}"#.len()));
        let nul = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"x\u0000y"}}}"#;
        assert!(initialize_params(nul).unwrap().1.is_err());
    }
}

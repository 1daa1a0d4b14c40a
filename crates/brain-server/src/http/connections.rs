//! The MCP connection registry (SPEC §1 MCP connection): every `Mcp-Session-Id`
//! is bound to the tenant and credential that initialized it. Any request
//! carrying an id that is unknown, closed, or another credential's is answered
//! 404 and never reaches rmcp.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{Method, StatusCode};

use super::{AppState, error_response};
use crate::auth::{Principal, Tracer};

const SESSION_HEADER: &str = "mcp-session-id";

fn not_found() -> Response {
    error_response(
        StatusCode::NOT_FOUND,
        "session_not_found",
        "unknown MCP session; initialize a new connection",
    )
}

fn unavailable() -> Response {
    error_response(
        StatusCode::SERVICE_UNAVAILABLE,
        "internal",
        "the connection registry is unavailable; retry later",
    )
}

pub async fn bind(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let Some(principal) = req.extensions().get::<Principal>().cloned() else {
        return error_response(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "authentication required",
        );
    };
    let presented = req
        .headers()
        .get(SESSION_HEADER)
        .map(|v| v.to_str().map(str::to_owned));
    match presented {
        Some(Err(_)) => not_found(),
        Some(Ok(id)) => {
            match state.store.connection_get(&principal.tenant, &id).await {
                Ok(Some(c))
                    if !c.closed
                        && c.credential_kind == principal.kind
                        && c.credential_id == principal.credential_id =>
                {
                    // Lets rmcp restore a connection another replica initialized.
                    if let Some(params) = &c.init_params {
                        state.init_params.remember_json(&id, params);
                    }
                    if let Some(t) = c.tracer_session {
                        req.extensions_mut().insert(Tracer(t));
                    }
                }
                Ok(_) => return not_found(),
                Err(e) => {
                    tracing::error!(error = %e, "connection lookup failed");
                    return unavailable();
                }
            }
            let is_delete = req.method() == Method::DELETE;
            let resp = next.run(req).await;
            if is_delete && resp.status().is_success() {
                state.init_params.forget(&id);
                if let Err(e) = state.store.connection_close(&principal.tenant, &id).await {
                    tracing::error!(error = %e, "could not record a closed connection");
                }
            }
            resp
        }
        None => {
            if req.method() == Method::DELETE {
                return not_found();
            }
            let resp = next.run(req).await;
            // rmcp answers a successful initialize with the new connection's id.
            let new_id = resp
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(id) = new_id {
                let caller = principal.caller(Some(id.clone()));
                let params = state.init_params.take_json(&id);
                if let Err(e) = state.store.connection_open(&caller, &id, params).await {
                    tracing::error!(error = %e, "could not record a new connection");
                    return unavailable();
                }
            }
            resp
        }
    }
}

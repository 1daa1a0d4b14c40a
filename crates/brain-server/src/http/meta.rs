//! Health, readiness, RFC 9728 resource metadata, and the request span.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{Request, StatusCode};
use serde_json::json;

use super::AppState;
use crate::refusal::Refusal;
use brain_core::ErrorCode;

pub async fn live() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

pub async fn ready(State(state): State<AppState>) -> Response {
    let store = state.store.clone();
    let answer = state
        .probes
        .ready
        .get_or(|| async move {
            let pinged = store.ping().await.map_err(|e| e.to_string());
            if let Err(e) = &pinged {
                tracing::warn!(error = %e, "readiness check failed");
            }
            pinged
        })
        .await;
    match answer {
        // A provider that is down leaves its last keys in force: ready, and
        // saying so.
        Ok(()) => match state.auth.jwks() {
            Some(jwks) => Json(json!({"status": "ready", "database": "ok", "jwks": jwks.status()}))
                .into_response(),
            None => Json(json!({"status": "ready", "database": "ok"})).into_response(),
        },
        Err(_) => Refusal::new(ErrorCode::Internal, "the database is not reachable")
            .with_status(StatusCode::SERVICE_UNAVAILABLE)
            .into_response(),
    }
}

pub async fn resource_metadata(State(state): State<AppState>) -> Response {
    Json(json!({
        "resource": format!("{}/mcp", state.public_url),
        "authorization_servers": state.auth.issuers(),
        "scopes_supported": ["brain"],
        "bearer_methods_supported": ["header"],
        "resource_name": "brain",
    }))
    .into_response()
}

/// A span per request with method, route and a request id — never headers,
/// query strings or bodies (they may carry tokens or connection ids).
pub fn span_for<B>(req: &Request<B>) -> tracing::Span {
    tracing::info_span!(
        "request",
        method = %req.method(),
        path = %req.uri().path(),
        request_id = %request_id(req.headers()),
    )
}

/// The request id set by the outermost layer (`x-request-id`).
pub fn request_id(headers: &http::HeaderMap) -> &str {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
}

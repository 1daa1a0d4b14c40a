//! Bearer authentication for /mcp: a valid credential becomes a [`Principal`]
//! in the request's extensions and the `Authorization` header is removed, so no
//! tool can see or forward the token.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, StatusCode};

use super::{AppState, error_response};
use crate::auth::{AuthError, bearer};

pub async fn require_credential(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let token = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer);
    let result = match token {
        None => Err(AuthError::Missing),
        Some(t) => state.auth.authenticate(t),
    };
    match result {
        Ok(principal) => {
            req.headers_mut().remove(http::header::AUTHORIZATION);
            req.extensions_mut().insert(principal);
            next.run(req).await
        }
        Err(e) => {
            tracing::debug!(reason = %e, "credential refused");
            let mut challenge = format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                state.public_url
            );
            if matches!(e, AuthError::Invalid(_)) {
                challenge.push_str(", error=\"invalid_token\"");
            }
            let mut resp = error_response(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "a valid bearer token is required; see the resource metadata for how to get one",
            );
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                resp.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
            }
            resp
        }
    }
}

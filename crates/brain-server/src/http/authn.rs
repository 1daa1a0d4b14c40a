//! Bearer authentication for /mcp: a valid credential becomes a [`Principal`]
//! in the request's extensions and the `Authorization` header is removed, so no
//! tool can see or forward the token.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;

use brain_core::model::{CredentialKind, Role};
use brain_core::operators::{SHARED_TOKEN_PREFIX, is_shared_token_shape, shared_token_hash};

use super::AppState;
use crate::auth::{AuthError, Principal, bearer};
use crate::refusal::Refusal;
use axum::response::IntoResponse;
use brain_core::ErrorCode;

/// A shared token authenticates as `shared_token` in the tenant of its row; it
/// is looked up by hash only, and carries no role beyond agent. Only a token
/// of the minted shape is looked up, a few at a time per replica
/// ([`super::limits::LOOKUPS_AT_ONCE`]): no one can keep the database busy
/// with made-up tokens before a credential (and its limits) is known.
async fn shared_token(state: &AppState, token: &str) -> Result<Principal, AuthError> {
    if !is_shared_token_shape(token) {
        return Err(AuthError::Invalid("not a shared token".into()));
    }
    let Some(_place) = state.limits.lookup_place().await else {
        metrics::counter!("brain_shared_token_lookups_refused_total").increment(1);
        return Err(AuthError::Busy);
    };
    metrics::counter!("brain_shared_token_lookups_total").increment(1);
    match state
        .store
        .shared_token_find(&shared_token_hash(token))
        .await
    {
        Ok(Some((tenant, t))) => Ok(Principal {
            tenant,
            kind: CredentialKind::SharedToken,
            credential_id: t.token_id.to_string(),
            subject: t.name,
            role: Role::Agent,
            token_id: Some(t.token_id.to_string()),
            valid_until: None,
        }),
        Ok(None) => Err(AuthError::Invalid("unknown or revoked shared token".into())),
        Err(e) => {
            tracing::error!(error = %e, "shared token lookup failed");
            Err(AuthError::Invalid("shared token lookup failed".into()))
        }
    }
}

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
        Some(t) if t.starts_with(SHARED_TOKEN_PREFIX) => shared_token(&state, t).await,
        Some(t) => state.auth.authenticate(t).await,
    };
    match result {
        Ok(principal) => {
            let shared = token
                .filter(|t| t.starts_with(SHARED_TOKEN_PREFIX))
                .map(shared_token_hash);
            // Only a GET opens a stream that outlives its request; a POST's
            // answer (SSE too) is that request's, and is let finish.
            let opens_stream = req.method() == http::Method::GET;
            req.headers_mut().remove(http::header::AUTHORIZATION);
            let watch = super::streams::CredentialWatch::new(&state, &principal, shared);
            req.extensions_mut().insert(watch.clone());
            req.extensions_mut().insert(principal);
            let resp = next.run(req).await;
            if opens_stream {
                super::streams::while_credential_holds(&watch, resp)
            } else {
                resp
            }
        }
        Err(AuthError::Busy) => super::limits::too_many(
            "too many credentials are being checked at once; retry",
            super::limits::LOOKUP_WAIT,
        ),
        Err(e) => {
            tracing::debug!(reason = %e, "credential refused");
            let mut challenge = format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                state.public_url
            );
            if matches!(e, AuthError::Invalid(_)) {
                challenge.push_str(", error=\"invalid_token\"");
            }
            let mut resp = Refusal::new(
                ErrorCode::Unauthenticated,
                "a valid bearer token is required; see the resource metadata for how to get one",
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                resp.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
            }
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use brain_store_memory::MemoryStore;
    use tower::ServiceExt;

    use super::*;
    use crate::auth::{Authenticator, Principal};
    use crate::config::{JwtConfig, Secret};

    const SECRET: &str = "unit-secret-unit-secret-unit-secret-0123";

    fn state() -> AppState {
        let jwt = JwtConfig {
            hs256_secret: Some(Secret::new(SECRET)),
            public_keys: None,
            issuer: "brain".into(),
            audience: "brain".into(),
            claims: Default::default(),
            jwks: Default::default(),
        };
        // Authentication needs no database: the store in memory.
        AppState::from(crate::http::AppParts {
            store: Arc::new(MemoryStore::new(21_600, 1_800)),
            auth: Arc::new(Authenticator::from_config(&jwt).unwrap()),
            public_url: "http://brain.test".into(),
            allowed_hosts: Arc::new(vec![]),
            allowed_origins: Arc::new(vec![]),
            init_params: Default::default(),
            elevation_max_secs: 3600,
            admin_limiter: crate::http::admin_limiter(),
            limits: crate::http::limits::Limits::new(Default::default()),
            probes: Default::default(),
        })
    }

    /// What the next layer sees: whether a token is still present, and the principal.
    async fn echo(req: Request) -> String {
        let has_auth = req.headers().contains_key(http::header::AUTHORIZATION);
        let sub = req
            .extensions()
            .get::<Principal>()
            .map(|p| p.subject.clone());
        format!("{has_auth} {}", sub.unwrap_or_default())
    }

    #[tokio::test]
    async fn the_token_is_removed_before_anything_downstream_runs() {
        let token = crate::token::mint(&crate::token::MintRequest {
            secret: SECRET,
            issuer: "brain",
            audience: "brain",
            tenant: "acme",
            subject: "alice",
            role: "agent",
            ttl_secs: 60,
        })
        .unwrap();
        let app = Router::new()
            .route("/", get(echo))
            .layer(axum::middleware::from_fn_with_state(
                state(),
                require_credential,
            ));
        let req = http::Request::get("/")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), http::StatusCode::OK);
        let body = axum::body::to_bytes(resp.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"false alice");
    }
}

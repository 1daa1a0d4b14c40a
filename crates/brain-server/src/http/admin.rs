//! `/brain-admin`: elevations (SPEC §1 Elevation, §4), for operator JWTs.
//!
//! An elevation names one MCP connection opened by the same credential — or,
//! for a client on the sessionless protocol revision, one of its brain
//! sessions. Grants and revocations write receipts whatever their outcome;
//! each credential is rate-limited.

use crate::refusal::Refusal;
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Extension, Json, Router};
use brain_core::DomainError;
use brain_core::error::ErrorCode;
use brain_core::ids::{ElevationId, SessionId};
use brain_core::model::{CredentialKind, Role};
use brain_core::operators::{ELEVATION_DEFAULT_SECS, ElevationRequest, ElevationTarget};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::AppState;
use crate::auth::Principal;

/// Admin calls per credential per minute, on each replica.
const PER_MINUTE: u32 = 30;

pub type Limiter = Arc<DefaultKeyedRateLimiter<String>>;

pub fn limiter() -> Limiter {
    let quota = Quota::per_minute(NonZeroU32::new(PER_MINUTE).unwrap_or(NonZeroU32::MIN));
    Arc::new(RateLimiter::keyed(quota))
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/brain-admin/elevations", get(list).post(grant))
        .route("/brain-admin/elevations/{id}", delete(revoke))
}

/// The admin bucket of a credential: keyed by tenant, credential and role,
/// so neither a same-named subject of another tenant nor an agent token of the
/// operator's own subject can spend an operator's calls.
pub(super) fn limited(state: &AppState, p: &Principal) -> Option<Response> {
    let key = super::limits::credential_key(p);
    state.admin_limiter.check_key(&key).err().map(|_| {
        super::limits::too_many(
            "too many admin calls from this credential; wait a minute and retry",
            std::time::Duration::from_secs(60 / u64::from(PER_MINUTE).max(1)),
        )
    })
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// The MCP connection to elevate (its `Mcp-Session-Id`).
    #[serde(default)]
    pub mcp_session_id: Option<String>,
    /// For sessionless clients: the brain session to elevate instead.
    #[serde(default)]
    pub session_id: Option<String>,
    pub reason: String,
    #[serde(default)]
    pub ttl_secs: Option<i64>,
}

async fn grant(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    body: Result<Json<GrantBody>, axum::extract::rejection::JsonRejection>,
) -> Response {
    if let Some(r) = limited(&state, &p) {
        return r;
    }
    let Ok(Json(body)) = body else {
        return Refusal::from(DomainError::invalid_argument(
            "body",
            "must be JSON {mcp_session_id | session_id, reason, ttl_secs}",
        ))
        .into_response();
    };
    let digest = crate::mcp::args::digest(&body, &[]);
    let target = match (&body.mcp_session_id, &body.session_id) {
        (Some(c), None) if !c.is_empty() && c.len() <= 256 => {
            ElevationTarget::Connection(c.clone())
        }
        (None, Some(s)) => match SessionId::parse(s) {
            Ok(id) => ElevationTarget::Session(id),
            Err(e) => return Refusal::from(e).into_response(),
        },
        _ => {
            return Refusal::from(DomainError::invalid_argument(
                "mcp_session_id",
                "give exactly one of mcp_session_id or session_id",
            ))
            .into_response();
        }
    };
    if let Err(e) = brain_core::text::check("reason", &body.reason) {
        return Refusal::from(e).into_response();
    }
    if let Err(e) = body
        .mcp_session_id
        .as_deref()
        .map_or(Ok(()), |c| brain_core::text::check("mcp_session_id", c))
    {
        return Refusal::from(e).into_response();
    }
    if body.reason.len() > 4096 {
        return Refusal::from(DomainError::invalid_argument(
            "reason",
            "must be at most 4 KiB",
        ))
        .into_response();
    }
    let req = ElevationRequest {
        target,
        reason: body.reason,
        ttl_secs: body.ttl_secs.unwrap_or(ELEVATION_DEFAULT_SECS),
        max_secs: state.elevation_max_secs,
        digest,
    };
    match state.store.elevation_grant(&p.caller(None), req).await {
        Ok(e) => (StatusCode::CREATED, Json(json!(e))).into_response(),
        Err(e) => Refusal::from(e).into_response(),
    }
}

async fn list(State(state): State<AppState>, Extension(p): Extension<Principal>) -> Response {
    if p.kind != CredentialKind::Jwt || p.role != Role::Operator {
        return Refusal::from(DomainError::new(
            ErrorCode::Forbidden,
            "only operator credentials hold elevations",
        ))
        .into_response();
    }
    if let Some(r) = limited(&state, &p) {
        return r;
    }
    match state.store.elevation_list(&p.caller(None)).await {
        Ok(list) => Json(json!({ "elevations": list })).into_response(),
        Err(e) => Refusal::from(e).into_response(),
    }
}

async fn revoke(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    Path(id): Path<String>,
) -> Response {
    if let Some(r) = limited(&state, &p) {
        return r;
    }
    let id = match ElevationId::parse(&id) {
        Ok(id) => id,
        Err(e) => return Refusal::from(e).into_response(),
    };
    let digest = brain_core::digest::request_digest(&json!({ "elevation_id": id.to_string() }));
    match state
        .store
        .elevation_revoke(&p.caller(None), id, &digest)
        .await
    {
        Ok(e) => Json(json!(e)).into_response(),
        Err(e) => Refusal::from(e).into_response(),
    }
}

//! The operator console at `/brain-admin/` (SPEC §4): a page and its script,
//! compiled into the binary, and the JSON reads it makes.
//!
//! The page itself holds no data and needs no credential. Everything it shows
//! comes from the routes below, which take the operator's JWT as a bearer
//! header (the page keeps it in `sessionStorage`; never a cookie, so there is
//! no CSRF surface) and answer other credentials 401/403 exactly like the
//! elevation routes. Every read goes through the same code as the matching
//! tool (`tools::call`), so the console shows what an agent of the tenant
//! would see: tenant-scoped, connection ids of receipts as fingerprints.

// An error in these handlers *is* the HTTP response, built once and returned
// at once; boxing it would only add noise.
#![allow(clippy::result_large_err)]

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use brain_core::DomainError;
use brain_core::error::ErrorCode;
use brain_core::ids::ProjectKey;
use brain_core::model::{CredentialKind, Role};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::admin::limited;
use crate::auth::Principal;
use crate::refusal::Refusal;
use crate::tools::{self, ToolCtx};

const INDEX: &str = include_str!("../../console/index.html");
const SCRIPT: &str = include_str!("../../console/console.js");
const STYLE: &str = include_str!("../../console/console.css");

/// No inline script or style, nothing from elsewhere, no framing, no forms
/// posting anywhere: the page can only talk to this server's own routes.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page and its assets: public (they hold no data), revalidated on each
/// load so an upgrade is picked up, under a strict CSP.
pub fn assets() -> Router<AppState> {
    Router::new()
        .route(
            "/brain-admin",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/brain-admin/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/brain-admin/console.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/brain-admin/console.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The console's JSON reads; behind the bearer check like `/brain-admin/elevations`.
pub fn api() -> Router<AppState> {
    // Bodies and receipts stay out of the browser's disk cache.
    let no_store = |mut r: Response| async move {
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    };
    Router::new()
        .route("/brain-admin/api/me", get(me))
        .route("/brain-admin/api/projects", get(projects))
        .route("/brain-admin/api/project", get(project))
        .route("/brain-admin/api/project/delete", post(project_delete))
        .route("/brain-admin/api/receipts", get(receipts))
        .route("/brain-admin/api/receipts/verify", post(verify))
        .route("/brain-admin/api/targets", get(targets))
        .layer(axum::middleware::map_response(no_store))
}

/// Mental models shown on a project page (each read in full).
const MODELS_SHOWN: usize = 20;

/// The console is for operator JWTs only: agent and relay tokens, shared
/// tokens and stdio get 403 (the bearer check already answered 401).
fn operator(p: &Principal) -> Result<(), Response> {
    if p.kind == CredentialKind::Jwt && p.role == Role::Operator {
        Ok(())
    } else {
        Err(Refusal::from(DomainError::new(
            ErrorCode::Forbidden,
            "the console needs an operator JWT (role operator)",
        ))
        .into_response())
    }
}

async fn tool(state: &AppState, p: &Principal, name: &str, args: Value) -> Result<Value, Response> {
    let ctx = ToolCtx {
        store: state.store.as_ref(),
        caller: p.caller(None),
        known: None,
    };
    let args = args.as_object().cloned().unwrap_or_default();
    match tools::call(name, &ctx, args).await {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(Refusal::from(e).into_response()),
        None => Err(Refusal::from(DomainError::internal()).into_response()),
    }
}

async fn me(Extension(p): Extension<Principal>) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    Json(json!({"tenant": p.tenant.as_str(), "subject": p.subject})).into_response()
}

#[derive(Deserialize)]
struct ProjectsQuery {
    #[serde(default)]
    q: Option<String>,
}

async fn projects(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    Query(q): Query<ProjectsQuery>,
) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    let search = q.q.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if search.is_some_and(|s| s.len() > 128) {
        return Refusal::from(DomainError::invalid_argument(
            "q",
            "must be at most 128 characters",
        ))
        .into_response();
    }
    if let Some(Err(e)) = search.map(|s| brain_core::text::check("q", s)) {
        return Refusal::from(e).into_response();
    }
    let query = brain_core::store::ProjectQuery {
        search,
        limit: 200,
        ..Default::default()
    };
    let listed = state.store.projects(&p.tenant, &query).await;
    let usage = state.store.tenant_usage(&p.tenant).await;
    match (listed, usage) {
        (Ok(list), Ok(usage)) => Json(json!({ "projects": list, "usage": usage })).into_response(),
        (Err(e), _) | (_, Err(e)) => Refusal::from(e).into_response(),
    }
}

#[derive(Deserialize)]
struct ProjectQuery {
    name: String,
    #[serde(default)]
    slot: Option<String>,
}

async fn project(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    Query(q): Query<ProjectQuery>,
) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    let read = async {
        let key =
            ProjectKey::parse_for_caller(&q.name).map_err(|e| Refusal::from(e).into_response())?;
        let mut at = json!({"project": q.name});
        if let Some(s) = &q.slot {
            at["slot"] = json!(s);
        }
        let base = tool(&state, &p, "brain_focus_get", json!({"project": q.name})).await?;
        let focus = if q.slot.is_some() {
            tool(&state, &p, "brain_focus_get", at.clone()).await?
        } else {
            base.clone()
        };
        let mut hist = at.clone();
        hist["limit"] = json!(50);
        // The page shows each revision as its diff, as the tool answers it.
        let history = tool(&state, &p, "brain_focus_history", hist).await?;
        let sessions = tool(
            &state,
            &p,
            "brain_session_list",
            json!({"project": q.name, "limit": 50}),
        )
        .await?;
        let mut documents = serde_json::Map::new();
        for d in ["executive_state", "critique", "sync_note"] {
            let doc = tool(
                &state,
                &p,
                "brain_document_get",
                json!({"project": q.name, "kind": d}),
            )
            .await?;
            documents.insert(d.to_owned(), doc);
        }
        let names = state
            .store
            .mental_model_names(&p.tenant, &key)
            .await
            .map_err(|e| Refusal::from(e).into_response())?;
        let mut models = Vec::new();
        for name in names.into_iter().take(MODELS_SHOWN) {
            models.push(
                tool(
                    &state,
                    &p,
                    "brain_document_get",
                    json!({"project": q.name, "kind": "mental_model", "name": name}),
                )
                .await?,
            );
        }
        Ok::<_, Response>(json!({
            "project": q.name,
            "slot": q.slot,
            "slots": base["slots"],
            "base_focus": {"body": base["body"], "revision": base["revision"]},
            "focus": focus,
            "history": history,
            "sessions": sessions["sessions"],
            "documents": documents,
            "mental_models": models,
        }))
    };
    match read.await {
        Ok(v) => Json(v).into_response(),
        Err(r) => r,
    }
}

#[derive(Deserialize)]
struct ReceiptsQuery {
    #[serde(default)]
    since_seq: Option<i64>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    tool: Option<String>,
    #[serde(default)]
    outcome: Option<String>,
}

/// One page of the chain (100 receipts, oldest first) through `brain_receipts`;
/// the tool and outcome filters apply within the page.
async fn receipts(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    Query(q): Query<ReceiptsQuery>,
) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    let mut args = json!({"limit": 100, "since_seq": q.since_seq.unwrap_or(0)});
    for (k, v) in [("project", &q.project), ("session_id", &q.session_id)] {
        if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
            args[k] = json!(v);
        }
    }
    let page = match tool(&state, &p, "brain_receipts", args).await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let keep = |r: &Value, field: &str, want: &Option<String>| {
        want.as_deref()
            .filter(|w| !w.is_empty())
            .is_none_or(|w| r[field].as_str() == Some(w))
    };
    let shown: Vec<Value> = page["receipts"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter(|r| keep(r, "tool", &q.tool) && keep(r, "outcome", &q.outcome))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Json(json!({"receipts": shown, "ledger_tip": page["ledger_tip"], "next_since": page["next_since"]}))
        .into_response()
}

/// The check `brain receipts verify` runs: the whole chain against the tip,
/// a page at a time. It reads every receipt, so it spends the admin budget
/// (30 a minute per credential), not the per-second one.
async fn verify(State(state): State<AppState>, Extension(p): Extension<Principal>) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    if let Some(r) = limited(&state, &p) {
        return r;
    }
    let verdict = match brain_core::store::verify_receipts(
        state.store.as_ref(),
        &p.tenant,
        brain_core::store::VERIFY_PAGE,
    )
    .await
    {
        Ok(v) => v,
        Err(e) => return Refusal::from(e).into_response(),
    };
    let body = match verdict {
        Ok((n, seq, hash)) => json!({"ok": true, "receipts": n, "tip_seq": seq, "tip": hash}),
        Err((bad, fault)) => json!({"ok": false, "seq": bad, "reason": fault}),
    };
    (StatusCode::OK, Json(body)).into_response()
}

#[derive(Deserialize)]
struct DeleteProject {
    name: String,
    /// The project's name typed again: a deletion cannot be undone.
    confirm: String,
}

/// Delete a project of the operator's tenant (its receipts stay, and one more
/// records the deletion); `confirm` must repeat its name.
async fn project_delete(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    body: Result<Json<DeleteProject>, axum::extract::rejection::JsonRejection>,
) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    if let Some(r) = limited(&state, &p) {
        return r;
    }
    let Ok(Json(req)) = body else {
        return Refusal::from(DomainError::invalid_argument(
            "body",
            "must be JSON {\"name\": project, \"confirm\": the same name}",
        ))
        .into_response();
    };
    if req.confirm != req.name {
        return Refusal::from(DomainError::new(
            ErrorCode::ConfirmRequired,
            "type the project's name again in confirm: a deletion cannot be undone",
        ))
        .into_response();
    }
    let key = match ProjectKey::parse_for_caller(&req.name) {
        Ok(k) => k,
        Err(e) => return Refusal::from(e).into_response(),
    };
    match state.store.project_delete(&p.caller(None), &key).await {
        Ok(()) => Json(json!({"deleted": key.as_str()})).into_response(),
        Err(e) => Refusal::from(e).into_response(),
    }
}

async fn targets(State(state): State<AppState>, Extension(p): Extension<Principal>) -> Response {
    if let Err(r) = operator(&p) {
        return r;
    }
    match state.store.operator_targets(&p.caller(None)).await {
        Ok(t) => Json(json!(t)).into_response(),
        Err(e) => Refusal::from(e).into_response(),
    }
}

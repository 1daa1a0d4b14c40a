//! The operator console at `/brain-admin/` (SPEC §4): a page and its script,
//! compiled into the binary, and the JSON reads it makes.
//!
//! The page itself holds no data and needs no credential. Everything it shows
//! comes from the routes below, which take the operator's JWT as a bearer
//! header (the page keeps it in `sessionStorage`; never a cookie, so there is
//! no CSRF surface) and answer other credentials 401/403 exactly like the
//! elevation routes. Every read calls the typed read of the matching tool
//! (`focus_get::read`, `receipts::page`, …), so the console shows what an
//! agent of the tenant would see: tenant-scoped, connection ids of receipts
//! as fingerprints.

// An error in these handlers *is* the HTTP response, built once and returned
// at once; boxing it would only add noise.
#![allow(clippy::result_large_err)]

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use brain_core::DomainError;
use brain_core::error::{ErrorCode, StoreError};
use brain_core::ids::{ProjectKey, SessionId, SlotName};
use brain_core::memory::DocumentKind;
use brain_core::model::{CredentialKind, Role};
use brain_core::store::{ReceiptQuery, SessionListQuery};
use http::{HeaderValue, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::admin::limited;
use crate::auth::Principal;
use crate::refusal::Refusal;
use crate::tools::{document_get, focus_get, focus_history, session_list};

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

/// A read's failure as the console's answer.
fn refused(e: StoreError) -> Response {
    Refusal::from(e).into_response()
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
        let slot = match q.slot.as_deref() {
            Some(s) => Some(SlotName::parse(s).map_err(|e| Refusal::from(e).into_response())?),
            None => None,
        };
        let (store, tenant) = (state.store.as_ref(), &p.tenant);
        let base = focus_get::read(store, tenant, &key, None)
            .await
            .map_err(refused)?;
        let focus = match &slot {
            Some(s) => focus_get::read(store, tenant, &key, Some(s))
                .await
                .map_err(refused)?,
            None => base.clone(),
        };
        // The page shows each revision as its diff, as the tool answers it.
        let history = focus_history::page(store, tenant, (&key, slot.as_ref()), None, 50)
            .await
            .map_err(refused)?;
        let listed = SessionListQuery {
            project: key.clone(),
            status: None,
            slot: None,
            client_key: None,
            after: None,
            from: None,
            limit: 50,
        };
        let sessions = session_list::page(store, tenant, &listed)
            .await
            .map_err(refused)?;
        let mut documents = serde_json::Map::new();
        for kind in [
            DocumentKind::ExecutiveState,
            DocumentKind::Critique,
            DocumentKind::SyncNote,
        ] {
            let doc = document_get::read(store, tenant, &key, kind, "")
                .await
                .map_err(refused)?;
            documents.insert(kind.as_str().to_owned(), doc);
        }
        let names = store
            .mental_model_names(tenant, &key)
            .await
            .map_err(refused)?;
        let mut models = Vec::new();
        for name in names.into_iter().take(MODELS_SHOWN) {
            let kind = DocumentKind::MentalModel;
            let model = document_get::read(store, tenant, &key, kind, &name)
                .await
                .map_err(refused)?;
            models.push(model);
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
    let since_seq = q.since_seq.unwrap_or(0);
    if since_seq < 0 {
        let e = DomainError::invalid_argument("since_seq", "must be 0 or more");
        return Refusal::from(e).into_response();
    }
    let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
    let project = given(&q.project).map(|p| ProjectKey::parse_for_caller(&p));
    let session = given(&q.session_id).map(|s| SessionId::parse(&s));
    let query = match (project.transpose(), session.transpose()) {
        (Ok(project), Ok(session_id)) => ReceiptQuery {
            project,
            session_id,
            after_seq: since_seq,
            before_seq: None,
            until_seq: None,
            limit: 100,
        },
        (Err(e), _) | (_, Err(e)) => return Refusal::from(e).into_response(),
    };
    let page =
        match crate::tools::receipts::page(state.store.as_ref(), &p.tenant, &query, None).await {
            Ok(v) => v,
            Err(e) => return refused(e),
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

//! Black-box: who may override, and how (SPEC §1 Elevation, §2.4 step 5, §2.5, §4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_testkit::app::{
    Client, TestApp, count_rows, exec, latest_connection, ok, refused, spawn_app, token, token_with,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn operator() -> String {
    token_with(json!({"tenant": "acme", "sub": "op", "role": "operator"}))
}

async fn admin(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut r = reqwest::Client::new()
        .request(method, app.url(path))
        .bearer_auth(token);
    if let Some(b) = body {
        r = r.json(&b);
    }
    let resp = r.send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn grant(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    admin(
        app,
        reqwest::Method::POST,
        "/brain-admin/elevations",
        token,
        Some(body),
    )
    .await
}

/// Make the base focus "0123456789", written by an agent at the current revision.
async fn ten_chars(app: &TestApp) {
    let c = app.client(&token("acme", "writer")).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    let out = ok(
        &c,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "w",
        "summary": "s", "next_focus": "0123456789",
        "expected_focus_revision": s["briefing"]["base_focus"]["revision"]}),
    )
    .await;
    assert_ne!(out["focus_outcome"], json!("conflict"));
    c.cancel().await.unwrap();
}

async fn shrink_end(c: &Client, key: &str) -> rmcp::model::CallToolResult {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": key}),
    )
    .await;
    let rev = s["briefing"]["base_focus"]["revision"].clone();
    brain_testkit::app::call(c, "brain_session_end", json!({"session_id": s["session"]["session_id"],
        "expected_client_key": key, "summary": "s", "next_focus": "01", "expected_focus_revision": rev,
        "allow_focus_shrink": true})).await
}

fn code(r: &rmcp::model::CallToolResult) -> Value {
    r.structured_content
        .as_ref()
        .map(|v| v["error"]["code"].clone())
        .unwrap_or(Value::Null)
}

async fn grants_in_ledger(app: &TestApp) -> Vec<String> {
    app.store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.tool == "brain_admin_elevation_grant")
        .map(|r| r.outcome)
        .collect()
}

#[tokio::test]
async fn an_elevation_lets_one_credential_override_on_one_connection() {
    let app = spawn_app().await;
    ten_chars(&app).await;
    let op = app.client(&operator()).await;
    let conn = latest_connection(&app, "brain|op").await;
    // Without an elevation: refused before any write.
    let r = shrink_end(&op, "k1").await;
    assert_eq!(code(&r), json!("focus_shrink_override_refused"));
    let (st, e) = grant(
        &app,
        &operator(),
        json!({"mcp_session_id": conn, "reason": "trim the focus", "ttl_secs": 120}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{e}");
    assert!(e["id"].as_str().unwrap().starts_with("elv_"));
    assert_eq!(e["mcp_session_id"], json!(conn));
    let (st, listed) = admin(
        &app,
        reqwest::Method::GET,
        "/brain-admin/elevations",
        &operator(),
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
    assert_eq!(listed["elevations"][0]["id"], e["id"]);
    // The same credential on another connection has no authority.
    let other = app.client(&operator()).await;
    assert_eq!(
        code(&shrink_end(&other, "k2").await),
        json!("focus_shrink_override_refused")
    );
    // On the elevated connection the override goes through, and the receipt says so.
    let r = shrink_end(&op, "k3").await;
    assert_ne!(r.is_error, Some(true), "{:?}", r.structured_content);
    assert_eq!(
        r.structured_content.unwrap()["focus_outcome"],
        json!("applied")
    );
    let last = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(
        (last.tool.as_str(), last.elevated),
        ("brain_session_end", true)
    );
    // Revoked: refused again.
    let path = format!("/brain-admin/elevations/{}", e["id"].as_str().unwrap());
    let (st, revoked) = admin(&app, reqwest::Method::DELETE, &path, &operator(), None).await;
    assert_eq!(st, StatusCode::OK);
    assert!(revoked["revoked_at"].is_string());
    ten_chars(&app).await;
    assert_eq!(
        code(&shrink_end(&op, "k4").await),
        json!("focus_shrink_override_refused")
    );
    let (_, listed) = admin(
        &app,
        reqwest::Method::GET,
        "/brain-admin/elevations",
        &operator(),
        None,
    )
    .await;
    assert_eq!(listed["elevations"], json!([]));
    op.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

#[tokio::test]
async fn an_expired_elevation_is_worth_nothing() {
    let app = spawn_app().await;
    ten_chars(&app).await;
    let op = app.client(&operator()).await;
    let conn = latest_connection(&app, "brain|op").await;
    let (st, _) = grant(
        &app,
        &operator(),
        json!({"mcp_session_id": conn, "reason": "r", "ttl_secs": 600}),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED);
    // Age it past its expiry (microseconds on SQLite, timestamptz on PostgreSQL).
    let aged = if app.db.url().starts_with("sqlite") {
        "UPDATE elevations SET expires_at = expires_at - 3600000000"
    } else {
        "UPDATE elevations SET expires_at = expires_at - interval '1 hour'"
    };
    exec(&app, aged).await;
    assert_eq!(
        code(&shrink_end(&op, "k").await),
        json!("focus_shrink_override_refused")
    );
    op.cancel().await.unwrap();
}

#[tokio::test]
async fn refused_grants_are_answered_clearly_and_leave_a_receipt() {
    let app = spawn_app().await;
    let op = app.client(&operator()).await;
    let conn = latest_connection(&app, "brain|op").await;
    let agent = app.client(&token("acme", "agent")).await;
    let agent_conn = latest_connection(&app, "brain|agent").await;
    let (_, shared) = app
        .store
        .shared_token_create(&TenantId::parse("acme").unwrap(), "ci-bots")
        .await
        .unwrap();
    let closing = app.client(&operator()).await;
    let closed_conn = latest_connection(&app, "brain|op").await;
    closing.cancel().await.unwrap(); // rmcp's client DELETEs its connection
    let body = |c: &str| json!({"mcp_session_id": c, "reason": "why"});
    let cases: Vec<(&str, String, Value, StatusCode, &str)> = vec![
        (
            "agent",
            token("acme", "agent"),
            body(&agent_conn),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "relay role",
            token_with(json!({"tenant": "acme", "sub": "r", "role": "relay"})),
            body(&conn),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "shared token",
            shared.clone(),
            body(&conn),
            StatusCode::FORBIDDEN,
            "forbidden",
        ),
        (
            "another subject's connection",
            operator(),
            body(&agent_conn),
            StatusCode::NOT_FOUND,
            "session_not_found",
        ),
        (
            "unknown connection",
            operator(),
            body("5b0c5b3e-0000-4000-8000-000000000000"),
            StatusCode::NOT_FOUND,
            "session_not_found",
        ),
        (
            "closed connection",
            operator(),
            body(&closed_conn),
            StatusCode::NOT_FOUND,
            "session_not_found",
        ),
        (
            "ttl above the maximum",
            operator(),
            json!({"mcp_session_id": conn, "reason": "r", "ttl_secs": 3601}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_argument",
        ),
    ];
    for (name, t, b, want, want_code) in cases {
        let before = grants_in_ledger(&app).await.len();
        let (st, e) = grant(&app, &t, b).await;
        assert_eq!(st, want, "{name}: {e}");
        assert_eq!(e["error"]["code"], json!(want_code), "{name}");
        let after = grants_in_ledger(&app).await;
        assert_eq!(after.len(), before + 1, "{name}: a receipt");
        assert_eq!(after.last().unwrap(), want_code, "{name}");
    }
    assert_eq!(count_rows(&app, "elevations").await, 0);
    // Unauthenticated is 401 and writes nothing.
    let (st, _) = grant(&app, "nope", body(&conn)).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED);
    op.cancel().await.unwrap();
    agent.cancel().await.unwrap();
}

#[tokio::test]
async fn sessionless_clients_elevate_a_brain_session() {
    let app = spawn_app().await;
    ten_chars(&app).await;
    let op = app.client(&operator()).await;
    let s = ok(
        &op,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let sid = s["session"]["session_id"].clone();
    let (st, e) = grant(&app, &operator(), json!({"session_id": sid, "reason": "r"})).await;
    assert_eq!(st, StatusCode::CREATED, "{e}");
    assert_eq!(e["session_id"], sid);
    // Default lifetime is 15 minutes.
    let granted = chrono::DateTime::parse_from_rfc3339(e["granted_at"].as_str().unwrap()).unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(e["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!((expires - granted).num_seconds(), 900);
    // A session elevation counts only for a caller with no connection; this one has one.
    let r = brain_testkit::app::call(&op, "brain_session_end", json!({"session_id": sid, "expected_client_key": "k",
        "summary": "s", "next_focus": "01", "expected_focus_revision": 1, "allow_focus_shrink": true})).await;
    assert_eq!(code(&r), json!("focus_shrink_override_refused"));
    // Another subject's session cannot be elevated.
    let agent = app.client(&token("acme", "agent")).await;
    let a = ok(
        &agent,
        "brain_session_start",
        json!({"project": "p", "client_key": "a"}),
    )
    .await;
    let (st, _) = grant(
        &app,
        &operator(),
        json!({"session_id": a["session"]["session_id"], "reason": "r"}),
    )
    .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    op.cancel().await.unwrap();
    agent.cancel().await.unwrap();
}

#[tokio::test]
async fn shared_tokens_authenticate_in_their_tenant_and_never_override() {
    let app = spawn_app().await;
    ten_chars(&app).await;
    let tenant = TenantId::parse("acme").unwrap();
    let (t, secret) = app
        .store
        .shared_token_create(&tenant, "bots")
        .await
        .unwrap();
    assert!(secret.starts_with("brain_st_"));
    assert_eq!(count_rows(&app, "shared_tokens").await, 1);
    let bots = app.client(&secret).await;
    let s = ok(
        &bots,
        "brain_session_start",
        json!({"project": "p", "client_key": "bot"}),
    )
    .await;
    assert_eq!(
        s["session"]["opened_by"],
        json!({"kind": "shared_token", "subject": "bots"})
    );
    assert_eq!(
        s["briefing"]["base_focus"]["revision"],
        json!(1),
        "the tenant of the token's row"
    );
    // Never an override, not even on a relay.
    let b = ok(
        &bots,
        "brain_session_start",
        json!({"project": "p", "client_key": "b2", "slot": "ui"}),
    )
    .await;
    let e = refused(&bots, "brain_session_relay", json!({"session_id": b["session"]["session_id"], "expected_client_key": "b2",
        "summary": "s", "next_focus": "x", "expected_focus_revision": 0, "allow_focus_shrink": true, "to_client_key": "c"})).await;
    assert_eq!(e["code"], json!("focus_shrink_override_refused"));
    assert_eq!(
        code(&shrink_end(&bots, "b3").await),
        json!("focus_shrink_override_refused")
    );
    bots.cancel().await.unwrap();
    // Revoked: 401.
    app.store
        .shared_token_revoke(&tenant, "bots")
        .await
        .unwrap();
    let resp = reqwest::Client::new()
        .post(app.mcp_url())
        .bearer_auth(&secret)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let listed = app.store.shared_token_list(&tenant).await.unwrap();
    assert_eq!(listed[0].token_id, t.token_id);
    assert!(listed[0].revoked_at.is_some());
}

#[tokio::test]
async fn admin_calls_are_rate_limited_per_credential() {
    let app = spawn_app().await;
    let mut limited = false;
    for _ in 0..40 {
        let (st, _) = admin(
            &app,
            reqwest::Method::GET,
            "/brain-admin/elevations",
            &operator(),
            None,
        )
        .await;
        if st == StatusCode::TOO_MANY_REQUESTS {
            limited = true;
            break;
        }
        assert_eq!(st, StatusCode::OK);
    }
    assert!(limited);
    // Another credential is not affected.
    let other = token_with(json!({"tenant": "acme", "sub": "op2", "role": "operator"}));
    let (st, _) = admin(
        &app,
        reqwest::Method::GET,
        "/brain-admin/elevations",
        &other,
        None,
    )
    .await;
    assert_eq!(st, StatusCode::OK);
}

/// Third hostile review, L1: after its connection's DELETE an elevation was
/// still listed active. (The cross-replica half is in tests/replicas.rs.)
#[tokio::test]
async fn an_elevation_is_gone_once_its_connection_is_deleted() {
    let app = spawn_app().await;
    let op = operator();
    let base = format!("http://{}", app.addr);
    let conn = brain_testkit::app::raw_connect(&base, &op).await;
    let http = reqwest::Client::new();
    let granted = http
        .post(app.url("/brain-admin/elevations"))
        .bearer_auth(&op)
        .json(&json!({"mcp_session_id": conn, "reason": "cleanup", "ttl_secs": 600}))
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
    let listed = |http: reqwest::Client| {
        let op = op.clone();
        let url = app.url("/brain-admin/elevations");
        async move {
            let v: Value = http
                .get(url)
                .bearer_auth(&op)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["elevations"].as_array().unwrap().len()
        }
    };
    assert_eq!(listed(http.clone()).await, 1);
    let deleted = http
        .delete(app.mcp_url())
        .bearer_auth(&op)
        .header("mcp-session-id", &conn)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(listed(http).await, 0);
}

//! Tracer sessions (SPEC §1): one per MCP connection, opened at initialize,
//! closed with the connection, holding the receipts of calls that address no
//! session, and refused by every lifecycle tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_testkit::app::{TestApp, exec, ok, refused, spawn_app, token};
use serde_json::{Value, json};

async fn tracer_of_last_receipt(app: &TestApp) -> String {
    let r = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    r.last()
        .unwrap()
        .session_id
        .expect("filed under the tracer")
        .to_string()
}

#[tokio::test]
async fn every_connection_has_a_tracer_that_lifecycle_tools_refuse() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    // A call that addresses no session is filed under the connection's tracer.
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "loose"}),
    )
    .await;
    let tracer = tracer_of_last_receipt(&app).await;
    let t = ok(&c, "brain_session_get", json!({"session_id": tracer})).await;
    assert_eq!(t["session"]["kind"], json!("tracer"));
    assert_eq!(t["session"]["status"], json!("open"));
    let key = t["session"]["client_key"].as_str().unwrap().to_owned();
    let cases: Vec<(&str, Value)> = vec![
        (
            "brain_session_end",
            json!({"session_id": tracer, "expected_client_key": key, "summary": "s", "next_focus": "n", "expected_focus_revision": 0}),
        ),
        (
            "brain_session_relay",
            json!({"session_id": tracer, "expected_client_key": key, "summary": "s", "next_focus": "n", "expected_focus_revision": 0, "to_client_key": "x"}),
        ),
        (
            "brain_session_abandon",
            json!({"session_id": tracer, "expected_client_key": key, "reason": "r", "confirm": true}),
        ),
        (
            "brain_session_bind",
            json!({"session_id": tracer, "expected_client_key": key, "slot": "s"}),
        ),
        (
            "brain_session_resume",
            json!({"session_id": tracer, "expected_client_key": key}),
        ),
        (
            "brain_remember",
            json!({"project": "p", "kind": "note", "text": "t", "session_id": tracer, "expected_client_key": key}),
        ),
    ];
    for (tool, args) in cases {
        let e = refused(&c, tool, args).await;
        assert_eq!(
            (e["code"].clone(), e["status"].clone()),
            (json!("tracer_session"), json!(409)),
            "{tool}"
        );
    }
    // The tracers' project is the server's own: callers cannot open it.
    let e = refused(
        &c,
        "brain_session_start",
        json!({"project": "_mcp", "client_key": key}),
    )
    .await;
    assert_eq!(
        (e["code"].clone(), e["details"]["field"].clone()),
        (json!("invalid_argument"), json!("project"))
    );
    assert_eq!(t["session"]["project"], json!("_mcp"));
    // Closing the connection closes its tracer.
    c.cancel().await.unwrap();
    let other = app.client(&token("acme", "agent")).await;
    let t = ok(&other, "brain_session_get", json!({"session_id": tracer})).await;
    assert_eq!(t["session"]["status"], json!("ended"));
    other.cancel().await.unwrap();
}

#[tokio::test]
async fn an_expired_connection_is_closed_with_its_tracer() {
    let app = spawn_app().await;
    let alice = token("acme", "alice");
    let base = format!("http://{}", app.addr);
    let conn = brain_testkit::app::raw_connect(&base, &alice).await;
    let (_, err) = brain_testkit::app::raw_tool(
        &base,
        &alice,
        &conn,
        "brain_remember",
        json!({"project": "p", "kind": "fact", "text": "x"}),
    )
    .await;
    assert!(!err);
    let tracer = tracer_of_last_receipt(&app).await;
    // Unused for longer than the idle window (30 minutes in tests' settings).
    let aged = if app.db.url().starts_with("sqlite") {
        "UPDATE mcp_connections SET last_seen_at = last_seen_at - 7200000000"
    } else {
        "UPDATE mcp_connections SET last_seen_at = last_seen_at - interval '2 hours'"
    };
    exec(&app, aged).await;
    // A replica trusts its memory of an open connection for up to a second
    // from its last lookup, however often the connection is used meanwhile:
    // used without pause, it is refused once that memory lapses.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut status = 200;
    while status == 200 && std::time::Instant::now() < give_up {
        (status, _) =
            brain_testkit::app::raw_rpc(&base, &alice, &conn, "tools/list", json!({})).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        status, 404,
        "an expired connection is gone on every replica, even one in use"
    );
    let c = app.client(&alice).await;
    let t = ok(&c, "brain_session_get", json!({"session_id": tracer})).await;
    assert_eq!(t["session"]["status"], json!("ended"));
    c.cancel().await.unwrap();
}

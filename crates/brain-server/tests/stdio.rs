//! `brain stdio`: the same tools over stdin/stdout, as the stdio credential.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_core::model::CredentialKind;
use brain_testkit::TestSqlite;
use brain_testkit::app::{call, ok};
use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

#[tokio::test]
async fn stdio_serves_the_tools_and_can_never_override() {
    let file = TestSqlite::new();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"));
    cmd.args(["stdio", "--tenant", "acme", "--database-url", &file.url])
        .env_remove("BRAIN_JWT_HS256_SECRET")
        .env("RUST_LOG", "warn");
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    assert_eq!(
        client
            .peer_info()
            .unwrap()
            .server_info
            .clone()
            .unwrap()
            .name,
        "brain"
    );
    assert_eq!(client.list_all_tools().await.unwrap().len(), 17);
    let a = ok(
        &client,
        "brain_session_start",
        json!({"project": "p", "client_key": "me"}),
    )
    .await;
    assert_eq!(
        a["session"]["opened_by"],
        json!({"kind": "stdio", "subject": "stdio"})
    );
    ok(
        &client,
        "brain_session_end",
        json!({"session_id": a["session"]["session_id"], "expected_client_key": "me",
        "summary": "s", "next_focus": "0123456789", "expected_focus_revision": 0}),
    )
    .await;
    let b = ok(
        &client,
        "brain_session_start",
        json!({"project": "p", "client_key": "me"}),
    )
    .await;
    let r = call(&client, "brain_session_end", json!({"session_id": b["session"]["session_id"], "expected_client_key": "me",
        "summary": "s", "next_focus": "01", "expected_focus_revision": 1, "allow_focus_shrink": true})).await;
    assert_eq!(
        r.structured_content.unwrap()["error"]["code"],
        json!("focus_shrink_override_refused")
    );
    client.cancel().await.unwrap();
    // Every receipt names the stdio credential.
    let store = brain_server::serve::open_store(&file.url, Default::default())
        .await
        .unwrap();
    let receipts = store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    assert_eq!(receipts.len(), 4);
    assert!(
        receipts
            .iter()
            .all(|r| r.credential_kind == CredentialKind::Stdio)
    );
}

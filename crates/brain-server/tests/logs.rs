//! Black-box: what a client sends does not reach the server's log (SPEC §4:
//! no token, connection id or body text in logs), on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{ServerProcess, TestBackend, raw_connect, raw_rpc, raw_tool, token};
use serde_json::json;

async fn server(db: &TestBackend, env: &[(&str, &str)]) -> ServerProcess {
    ServerProcess::start(env!("CARGO_BIN_EXE_brain"), db, env).await
}

/// Third hostile review, M3: an 878 KiB unknown tool name was echoed into
/// rmcp's warn line (879 KiB of log per call at the default RUST_LOG).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_unknown_tool_name_is_not_logged() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[]).await;
    let t = token("acme", "a");
    let conn = raw_connect(&srv.base, &t).await;
    let before = srv.log_len();
    let name = format!("brain_{}", "n".repeat(878 * 1024));
    let (status, msg) = raw_rpc(
        &srv.base,
        &t,
        &conn,
        "tools/call",
        json!({"name": name, "arguments": {}}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(msg["error"]["code"], -32602, "{}", &msg.to_string()[..200]);
    assert!(msg.to_string().len() < 1024, "the answer echoes the name");
    // A known tool still answers on the same connection.
    let (out, is_error) = raw_tool(
        &srv.base,
        &t,
        &conn,
        "brain_focus_get",
        json!({"project": "p"}),
    )
    .await;
    assert!(!is_error, "{out}");
    // The known tool's call is logged after whatever the unknown one logged.
    srv.wait_for_log("brain_focus_get").await;
    let grown = srv.log_len() - before;
    assert!(grown < 4096, "the log grew {grown} bytes");
}

/// Third hostile review, L5: the guard that keeps rmcp at warn was a
/// substring test, so `RUST_LOG="debug,myapp_normcp=info"` let rmcp log
/// connection ids (and, at debug, whole messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directive_that_only_spells_rmcp_keeps_it_quiet() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[("RUST_LOG", "debug,myapp_normcp=info")]).await;
    let t = token("acme", "a");
    let conn = raw_connect(&srv.base, &t).await;
    let secret_text = "a body that must stay out of the log";
    raw_tool(
        &srv.base,
        &t,
        &conn,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": secret_text}),
    )
    .await;
    let log = srv.wait_for_log("brain_remember").await;
    assert!(!log.contains(&conn), "a connection id reached the log");
    assert!(!log.contains(secret_text), "a body reached the log");
    assert!(!log.contains(&t), "a token reached the log");
}

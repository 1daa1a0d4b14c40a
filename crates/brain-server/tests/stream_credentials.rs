//! Black-box: an open event stream ends when its credential stops being
//! valid (third hostile review, L2: a revoked shared token or an expired JWT
//! kept its SSE stream, and its notifications, until the connection expired),
//! on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use brain_core::ids::TenantId;
use brain_server::http::limits::LimitSettings;
use brain_testkit::app::{TestApp, jwt_config, raw_connect, spawn_app_limited, token_with};
use serde_json::json;

async fn app() -> TestApp {
    spawn_app_limited(
        jwt_config(),
        LimitSettings {
            stream_recheck: Duration::from_millis(500),
            ..LimitSettings::default()
        },
    )
    .await
}

/// Open a GET event stream on `conn`; the response, still streaming.
async fn open_stream(app: &TestApp, token: &str, conn: &str) -> reqwest::Response {
    let resp = reqwest::Client::new()
        .get(app.mcp_url())
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", conn)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp
}

/// Read the stream until the server ends it; false if it is still open after `within`.
async fn ends_within(mut resp: reqwest::Response, within: Duration) -> bool {
    tokio::time::timeout(within, async {
        loop {
            match resp.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_shared_tokens_stream_ends() {
    let app = app().await;
    let tenant = TenantId::parse("acme").unwrap();
    let (_, secret) = app.store.shared_token_create(&tenant, "ci").await.unwrap();
    let conn = raw_connect(&format!("http://{}", app.addr), &secret).await;
    let kept = open_stream(&app, &secret, &conn).await;
    // Still valid: the stream stays open past several rechecks.
    assert!(
        !ends_within(kept, Duration::from_secs(2)).await,
        "ended while valid"
    );
    let stream = open_stream(&app, &secret, &conn).await;
    app.store.shared_token_revoke(&tenant, "ci").await.unwrap();
    assert!(
        ends_within(stream, Duration::from_secs(5)).await,
        "the stream outlived its revoked token"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_jwts_stream_ends() {
    let app = app().await;
    // Valid for about 3 s more: its exp passed 27 s ago, within the 30 s leeway.
    let exp = chrono::Utc::now().timestamp() - 27;
    let t = token_with(json!({"tenant": "acme", "sub": "short", "exp": exp}));
    let conn = raw_connect(&format!("http://{}", app.addr), &t).await;
    let stream = open_stream(&app, &t, &conn).await;
    assert!(
        ends_within(stream, Duration::from_secs(10)).await,
        "the stream outlived its token"
    );
}

/// Open a `subscriptions/listen` stream (protocol 2026-07-28: the answer to
/// a POST) on the focus of project `p`; the response, still streaming.
async fn open_listen(app: &TestApp, token: &str) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}},
        "notifications": {"resourceSubscriptions": ["brain://projects/p/focus"]}}});
    let resp = reqwest::Client::new()
        .post(app.mcp_url())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    resp
}

/// A listen stream is a POST's answer, which the front door lets finish: the
/// listen handler itself ends it when its credential stops holding (before,
/// a revoked shared token's or an expired JWT's listen stream heard its
/// tenant's focus changes until the server restarted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_ends_with_its_credential() {
    let app = app().await;
    let tenant = TenantId::parse("acme").unwrap();
    let (_, secret) = app.store.shared_token_create(&tenant, "ci").await.unwrap();
    let kept = open_listen(&app, &secret).await;
    assert!(
        !ends_within(kept, Duration::from_secs(2)).await,
        "ended while valid"
    );
    let stream = open_listen(&app, &secret).await;
    app.store.shared_token_revoke(&tenant, "ci").await.unwrap();
    assert!(
        ends_within(stream, Duration::from_secs(5)).await,
        "the listen stream outlived its revoked token"
    );

    let exp = chrono::Utc::now().timestamp() - 27;
    let t = token_with(json!({"tenant": "acme", "sub": "short", "exp": exp}));
    let stream = open_listen(&app, &t).await;
    assert!(
        ends_within(stream, Duration::from_secs(10)).await,
        "the listen stream outlived its token"
    );
}

//! Black-box: how the front door refuses (third hostile review, L4 and L6),
//! on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use brain_testkit::app::spawn_app;
use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// L4: a refusal sent before the body is read closed the keep-alive socket
/// without saying so; the client's next request on it then failed.
#[tokio::test]
async fn a_refusal_before_the_body_says_connection_close() {
    let app = spawn_app().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","pad":"{}"}}"#,
        "x".repeat(10_000)
    );
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer brain_st_{}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        "0".repeat(64),
        body.len()
    );
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let head = String::from_utf8_lossy(&out).to_lowercase();
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
}

/// L6: /metrics on the front door skipped the Host/Origin guard.
#[tokio::test]
async fn front_door_metrics_are_behind_the_host_guard() {
    let app = spawn_app().await;
    let http = reqwest::Client::new();
    let evil = http
        .get(app.url("/metrics"))
        .header("host", "evil.com")
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), StatusCode::FORBIDDEN);
    let origin = http
        .get(app.url("/metrics"))
        .header("origin", "https://evil.com")
        .send()
        .await
        .unwrap();
    assert_eq!(origin.status(), StatusCode::FORBIDDEN);
    let fine = http.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(fine.status(), StatusCode::OK);
}

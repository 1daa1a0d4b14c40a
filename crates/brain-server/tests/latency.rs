//! Regression guard for TCP_NODELAY: without it every streamed MCP reply waits
//! ~40 ms for the client's delayed ACK. The median of sequential calls over one
//! kept-alive connection must stay far below that.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use brain_testkit::app::{ok, spawn_app, token};
use serde_json::json;

#[tokio::test]
async fn sequential_calls_do_not_wait_for_delayed_acks() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    ok(&c, "brain_focus_get", json!({"project": "p"})).await; // warm up the pool
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..20 {
        eprintln!("{:?}", times.last());
        let t = Instant::now();
        ok(&c, "brain_focus_get", json!({"project": "p"})).await;
        times.push(t.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    assert!(
        median < Duration::from_millis(40),
        "median {median:?} — is TCP_NODELAY set?"
    );
    c.cancel().await.unwrap();
}

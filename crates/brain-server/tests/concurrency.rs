//! Black-box: many agents, each on its own MCP connection, ending on one
//! revision at once (SPEC §2.4 concurrency).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use brain_core::ids::TenantId;
use brain_core::receipt::verify_chain;
use brain_testkit::app::{ok, spawn_app, token};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_ends_apply_exactly_once() {
    const N: usize = 20;
    let app = spawn_app().await;
    let mut clients = Vec::new();
    for i in 0..N {
        let c = app.client(&token("acme", &format!("agent-{i}"))).await;
        let s = ok(
            &c,
            "brain_session_start",
            json!({"project": "race", "client_key": format!("k{i}")}),
        )
        .await;
        clients.push((c, s["session"]["session_id"].as_str().unwrap().to_owned()));
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for (i, (c, id)) in clients.into_iter().enumerate() {
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let out = ok(&c, "brain_session_end", json!({"session_id": id, "expected_client_key": format!("k{i}"),
                "summary": "raced", "next_focus": format!("focus from agent {i}"), "expected_focus_revision": 0})).await;
            c.cancel().await.unwrap();
            (
                out["focus_outcome"].as_str().unwrap().to_owned(),
                out["remaining_open_session_count"].as_i64().unwrap(),
            )
        }));
    }
    let mut outcomes = Vec::new();
    let mut remaining = Vec::new();
    for t in tasks {
        let (outcome, left) = t.await.unwrap();
        outcomes.push(outcome);
        remaining.push(left);
    }
    // The ends serialize on the focus, and each counts the sessions left open
    // once it holds it: the k-th to close sees N - k, so no count repeats.
    remaining.sort_unstable();
    assert_eq!(remaining, (0..N as i64).collect::<Vec<_>>());
    let applied = outcomes.iter().filter(|o| *o == "applied").count();
    let conflicts = outcomes.iter().filter(|o| *o == "conflict").count();
    assert_eq!((applied, conflicts), (1, N - 1), "{outcomes:?}");
    let receipts = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    assert_eq!(receipts.len(), 2 * N);
    assert_eq!(verify_chain(&receipts), Ok(2 * N), "linear and gap-free");
    let seqs: Vec<i64> = receipts.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=2 * N as i64).collect::<Vec<_>>());
}

/// Relays race on one slot as ends do (PostgreSQL writes a plain relay in
/// one call, a moved one again with locks): one applies and opens its
/// receiver's session, the rest conflict and open none, and each counts the
/// sessions the relays before it left open, the receiver among them.
#[tokio::test]
async fn twelve_concurrent_relays_on_one_slot_hand_it_over_once() {
    const N: usize = 12;
    let app = spawn_app().await;
    let mut clients = Vec::new();
    for i in 0..N {
        let c = app.client(&token("acme", &format!("agent-{i}"))).await;
        let s = ok(
            &c,
            "brain_session_start",
            json!({"project": "relays", "client_key": format!("k{i}"), "slot": "ui"}),
        )
        .await;
        clients.push((c, s["session"]["session_id"].as_str().unwrap().to_owned()));
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for (i, (c, id)) in clients.into_iter().enumerate() {
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let out = ok(&c, "brain_session_relay", json!({"session_id": id, "expected_client_key": format!("k{i}"),
                "summary": "raced", "next_focus": format!("ui from agent {i}"), "expected_focus_revision": 0,
                "to_client_key": format!("r{i}")})).await;
            c.cancel().await.unwrap();
            out
        }));
    }
    let mut outs = Vec::new();
    for t in tasks {
        outs.push(t.await.unwrap());
    }
    let applied: Vec<_> = outs
        .iter()
        .filter(|o| o["focus_outcome"] == "applied")
        .collect();
    assert_eq!(applied.len(), 1, "{outs:?}");
    let conflicts = outs.iter().filter(|o| o["focus_outcome"] == "conflict");
    assert_eq!(conflicts.clone().count(), N - 1, "{outs:?}");
    assert!(
        conflicts.clone().all(|o| o["new_session"].is_null()),
        "{outs:?}"
    );
    let next = &applied[0]["new_session"];
    assert_eq!(next["read_revision"], 1, "{next}");
    assert_eq!(next["bound_slot"], "ui", "{next}");
    // The first to close (the one that applied) leaves the other N - 1 and
    // its receiver open; the last leaves the receiver.
    let mut remaining: Vec<i64> = outs
        .iter()
        .map(|o| o["remaining_open_session_count"].as_i64().unwrap())
        .collect();
    remaining.sort_unstable();
    assert_eq!(remaining, (1..=N as i64).collect::<Vec<_>>());
    let c = app.client(&token("acme", "reader")).await;
    let got = ok(
        &c,
        "brain_session_get",
        json!({"session_id": next["session_id"]}),
    )
    .await;
    assert_eq!(got["session"]["status"], "open", "{got}");
    let receipts = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    assert_eq!(verify_chain(&receipts), Ok(2 * N), "linear and gap-free");
}

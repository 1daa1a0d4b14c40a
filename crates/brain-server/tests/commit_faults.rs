//! Black-box, PostgreSQL: a write whose COMMIT reached the database but
//! whose answer was lost with its connection. The server cannot know whether
//! it took effect, so it must not say "nothing was written": it answers
//! `internal` with `details.outcome: "unknown"`, and a repeated end is
//! answered from what was stored. The fault is real: brain talks to
//! PostgreSQL through a TCP proxy that forwards the COMMIT (or the Sync of
//! a statement that commits itself) and then cuts the connection before the
//! answer comes back. (SQLite's one writer has no connection to lose; how it
//! tells a failed COMMIT apart is unit-tested in brain-store-sqlite.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use brain_testkit::app::{Client, ServerProcess, ok, refused, token};
use brain_testkit::pg_proxy::{Act, Cut, ProxiedServer};
use serde_json::{Value, json};

/// A brain process whose database connections all pass through a proxy
/// (on PostgreSQL, on either pass).
async fn setup() -> ProxiedServer {
    ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await
}

async fn client(srv: &ServerProcess) -> Client {
    srv.client(&token("acme", "a")).await
}

async fn artifacts_holding(inspect: &str, marker: &str) -> i64 {
    let pool = sqlx::PgPool::connect(inspect).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE text LIKE $1")
        .bind(format!("%{marker}%"))
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

fn assert_unknown(e: &Value) {
    assert_eq!(e["code"], "internal", "{e}");
    assert_eq!(e["details"]["outcome"], "unknown", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("may or may not"), "{e}");
    assert!(!message.contains("nothing was written"), "{e}");
}

/// A remember into a known project runs alone, in its own statement's
/// transaction: it commits at its Sync. Its answer lost, the caller hears
/// the outcome is unknown, and the artifact is in fact there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_write_whose_answer_is_lost_is_told_unknown() {
    let s = setup().await;
    let c = client(&s.srv).await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "first"}),
    )
    .await;
    s.proxy.rule("marker-lone-9f3", Act::Cut(Cut::AfterSync));
    let e = refused(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "marker-lone-9f3"}),
    )
    .await;
    assert_eq!(s.proxy.cuts(), 1);
    assert_unknown(&e);
    assert_eq!(artifacts_holding(&s.inspect, "marker-lone-9f3").await, 1);
    // The server goes on: the next write commits and is answered.
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "after"}),
    )
    .await;
}

/// Three remembers queue behind a fourth (held in the proxy), so they share
/// one transaction and one COMMIT (the group commit). The COMMIT's answer
/// lost, each of the three hears the outcome is unknown; all three are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commit_whose_answer_is_lost_tells_every_member_unknown() {
    let s = setup().await;
    let c = client(&s.srv).await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "first"}),
    )
    .await;
    s.proxy
        .rule("marker-hold-a11", Act::Stall(Duration::from_millis(600)));
    s.proxy.rule("marker-batch-b22", Act::Cut(Cut::AfterCommit));
    let held = c.peer().clone();
    let first = tokio::spawn(async move {
        ok(
            &held,
            "brain_remember",
            json!({"project": "p", "kind": "note", "text": "marker-hold-a11"}),
        )
        .await
    });
    // The held remember is in the proxy, holding the tenant's group commit.
    s.proxy.fired("marker-hold-a11").await;
    let texts = ["marker-batch-x1", "marker-batch-b22 x2", "marker-batch-x3"];
    let batch = futures_join(&c, &texts).await;
    first.await.unwrap();
    assert_eq!(s.proxy.cuts(), 1, "the batch's COMMIT was not cut");
    for e in &batch {
        assert_unknown(e);
    }
    assert_eq!(artifacts_holding(&s.inspect, "marker-batch-").await, 3);
}

async fn futures_join(c: &Client, texts: &[&str]) -> Vec<Value> {
    let calls = texts.iter().map(|t| {
        let peer = c.peer().clone();
        let text = (*t).to_owned();
        tokio::spawn(async move {
            refused(
                &peer,
                "brain_remember",
                json!({"project": "p", "kind": "note", "text": text}),
            )
            .await
        })
    });
    let mut out = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        out.push(call.await.unwrap());
    }
    out
}

/// An end is one call (`brain_end`) in its own statement's transaction,
/// which commits at its Sync. Its answer lost, the agent hears the outcome
/// is unknown; the focus did move, and the same end sent again is answered
/// from what was stored (a safe retry), its body read back from history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_whose_answer_is_lost_is_told_unknown_and_retries_safely() {
    let s = setup().await;
    let c = client(&s.srv).await;
    let started = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let id = started["session"]["session_id"].clone();
    let end = json!({"session_id": id, "expected_client_key": "k", "summary": "s",
                     "next_focus": "the plan: marker-end-c33", "expected_focus_revision": 0});
    s.proxy.rule("marker-end-c33", Act::Cut(Cut::AfterSync));
    let e = refused(&c, "brain_session_end", end.clone()).await;
    assert_eq!(s.proxy.cuts(), 1);
    assert_unknown(&e);
    let focus = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(focus["revision"], 1, "{focus}");
    assert_eq!(focus["body"], "the plan: marker-end-c33", "{focus}");
    let again = ok(&c, "brain_session_end", end).await;
    assert_eq!(again["focus_outcome"], "applied", "{again}");
    assert_eq!(again["focus_revision_at_end"], 1, "{again}");
    assert_eq!(again["replayed"], true, "{again}");
}

//! Black-box, both stores: `BRAIN_TENANT_QUOTA_BYTES` bounds the bytes of
//! bodies and texts a tenant holds. A write past it is refused with
//! `quota_exceeded` (507) naming the usage and the quota, and writes nothing;
//! reads, an end without a focus change, acknowledgements still work; other
//! tenants are untouched; concurrent writers never overshoot.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{ServerProcess, TestBackend, ok, refused, token};
use serde_json::{Value, json};

const QUOTA: i64 = 10_000;

async fn server(db: &TestBackend) -> ServerProcess {
    let quota = QUOTA.to_string();
    ServerProcess::start(
        env!("CARGO_BIN_EXE_brain"),
        db,
        &[("BRAIN_TENANT_QUOTA_BYTES", quota.as_str())],
    )
    .await
}

fn note(text: &str) -> Value {
    json!({"project": "p", "kind": "todo", "text": text})
}

async fn usage(db: &TestBackend, tenant: &str) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["tenant", "usage", "--tenant", tenant])
        .env("DATABASE_URL", db.url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_past_the_quota_is_refused_and_cleanup_still_works() {
    let db = TestBackend::create().await;
    let srv = server(&db).await;
    let c = srv.client(&token("acme", "a")).await;
    // A focus of 4 bytes, then an artifact that brings the tenant near the quota.
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k1"}),
    )
    .await;
    ok(
        &c,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "k1",
               "summary": "s", "next_focus": "plan", "expected_focus_revision": 0}),
    )
    .await;
    let big = ok(&c, "brain_remember", note(&"a".repeat(8_000))).await;
    let before = usage(&db, "acme").await;
    assert!(before.contains("quota_bytes=10000"), "{before}");
    let held: i64 = before
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bytes="))
        .unwrap()
        .parse()
        .unwrap();
    assert!((8_004..8_100).contains(&held), "{before}");

    // Past it: refused, with the usage and the quota, and nothing written.
    let e = refused(
        &c,
        "brain_remember",
        note(&format!("zebra {}", "b".repeat(3_000))),
    )
    .await;
    assert_eq!(e["code"], "quota_exceeded", "{e}");
    assert_eq!(e["status"], 507, "{e}");
    assert_eq!(e["details"]["quota"], "bytes", "{e}");
    assert_eq!(e["details"]["usage"], held, "{e}");
    assert_eq!(e["details"]["limit"], QUOTA, "{e}");
    assert_eq!(usage(&db, "acme").await, before, "a refused write counted");
    let found = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "zebra"}),
    )
    .await;
    assert_eq!(found["results"].as_array().unwrap().len(), 0, "{found}");

    // A focus change past it is refused too; the session stays open, and an
    // end that keeps the focus as it is still works.
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k2"}),
    )
    .await;
    let id = s["session"]["session_id"].clone();
    let e = refused(
        &c,
        "brain_session_end",
        json!({"session_id": id, "expected_client_key": "k2", "summary": "s",
               "next_focus": format!("plan\n{}", "c".repeat(3_000)), "expected_focus_revision": 1}),
    )
    .await;
    assert_eq!(e["code"], "quota_exceeded", "{e}");
    let focus = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(focus["revision"], 1, "{focus}");
    let kept = ok(
        &c,
        "brain_session_end",
        json!({"session_id": id, "expected_client_key": "k2", "summary": "nothing new",
               "next_focus": "plan", "expected_focus_revision": 1}),
    )
    .await;
    assert_eq!(kept["focus_outcome"], "unchanged", "{kept}");
    // Acknowledging a todo still works over the quota.
    ok(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [big["artifact"]["artifact_id"]], "note": "done"}),
    )
    .await;

    // Another tenant writes as before.
    let other = srv.client(&token("globex", "a")).await;
    ok(&other, "brain_remember", note(&"d".repeat(8_000))).await;

    // Operators see it without a label per tenant.
    let metrics = reqwest::get(format!("{}/metrics", srv.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("brain_tenants_near_quota 2"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("quota") || l.contains("usage"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(metrics.contains("brain_tenant_quota_bytes 10000"));
}

/// Thirty writers of 1,000 bytes race for a 10,000-byte quota: at most ten
/// are accepted, and the tenant never holds more than its quota.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_writers_never_overshoot_the_quota() {
    let db = TestBackend::create().await;
    let srv = server(&db).await;
    let c = srv.client(&token("acme", "a")).await;
    ok(&c, "brain_remember", note("seed")).await;
    let calls: Vec<_> = (0..30)
        .map(|i| {
            let peer = c.peer().clone();
            tokio::spawn(async move {
                let text = format!("{i:04}{}", "r".repeat(996));
                let args = note(&text).as_object().cloned().unwrap();
                peer.call_tool(
                    rmcp::model::CallToolRequestParams::new("brain_remember").with_arguments(args),
                )
                .await
                .unwrap()
            })
        })
        .collect();
    let mut accepted = 0;
    for call in calls {
        let r = call.await.unwrap();
        if r.is_error == Some(true) {
            let e = &r.structured_content.unwrap()["error"];
            assert_eq!(e["code"], "quota_exceeded", "{e}");
        } else {
            accepted += 1;
        }
    }
    let held = usage(&db, "acme").await;
    let bytes: i64 = held
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bytes="))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(accepted, 9, "4 bytes of seed leave room for nine: {held}");
    assert_eq!(bytes, 4 + 9 * 1_000, "{held}");
}

async fn bytes_held(db: &TestBackend, tenant: &str) -> i64 {
    let held = usage(db, tenant).await;
    held.split_whitespace()
        .find_map(|w| w.strip_prefix("bytes="))
        .unwrap()
        .parse()
        .unwrap()
}

async fn start(c: &brain_testkit::app::Client, key: &str) -> Value {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": key}),
    )
    .await;
    s["session"]["session_id"].clone()
}

fn end(id: &Value, key: &str, summary: &str, body: &str, rev: i64) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": summary,
           "next_focus": body, "expected_focus_revision": rev})
}

/// Past its quota a tenant can still close its sessions, but a close stores
/// no body of its own and at most 1 KiB of summary and reasons: an unchanged
/// end names the revision it kept instead of storing the body again, and a
/// stale end's proposal (kept as the session's next_focus) or a long summary
/// is refused, so start + end cannot grow the tenant by a body a pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_quota_a_close_stores_no_body_and_only_short_notes() {
    let db = TestBackend::create().await;
    let srv = server(&db).await;
    let c = srv.client(&token("acme", "a")).await;
    let plan = format!("plan\n{}", "p".repeat(2_995));
    let s = start(&c, "k").await;
    ok(&c, "brain_session_end", end(&s, "k", "s", &plan, 0)).await;
    ok(&c, "brain_remember", note(&"a".repeat(6_500))).await;
    let held = bytes_held(&db, "acme").await;
    assert_eq!(held, 1 + 3_000 + 6_500);

    // An unchanged end counts its summary only: its next_focus is revision 1.
    let s = start(&c, "k").await;
    let kept = ok(
        &c,
        "brain_session_end",
        end(&s, "k", &"x".repeat(1_000), &plan, 1),
    )
    .await;
    assert_eq!(kept["focus_outcome"], "unchanged", "{kept}");
    let past = bytes_held(&db, "acme").await;
    assert_eq!(past, held + 1_000, "the kept body is not stored again");
    assert!(past > QUOTA);
    let read = ok(&c, "brain_session_get", json!({"session_id": s})).await;
    assert_eq!(read["session"]["next_focus"], plan.as_str(), "{read}");

    // Past the quota: a stale end's proposal, or a long summary, is refused,
    // nothing is counted and the session stays open.
    let s = start(&c, "k").await;
    for (summary, body, rev) in [
        ("stale", "q".repeat(9_000), 0),
        (&*"y".repeat(1_100), plan.clone(), 1),
    ] {
        let e = refused(&c, "brain_session_end", end(&s, "k", summary, &body, rev)).await;
        assert_eq!(e["code"], "quota_exceeded", "{e}");
        assert_eq!(e["details"]["limit"], QUOTA, "{e}");
        assert_eq!(
            bytes_held(&db, "acme").await,
            past,
            "a refused close counted"
        );
        let read = ok(&c, "brain_session_get", json!({"session_id": s})).await;
        assert_eq!(read["session"]["status"], "open", "{read}");
    }
    // What winds down still works: an unchanged end with a short summary…
    let args = end(&s, "k", "short", &plan, 1);
    let kept = ok(&c, "brain_session_end", args.clone()).await;
    assert_eq!(kept["focus_outcome"], "unchanged", "{kept}");
    assert_eq!(kept["focus_at_end"]["body"], plan.as_str(), "{kept}");
    assert_eq!(bytes_held(&db, "acme").await, past + 5);
    // …whose replay answers the body it kept, read back from the history.
    let mut replayed = kept.clone();
    replayed["replayed"] = json!(true);
    assert_eq!(ok(&c, "brain_session_end", args).await, replayed);
    // …and an abandon with a short reason, not a long one.
    let s = start(&c, "k").await;
    let abandon = |reason: String| json!({"session_id": s, "expected_client_key": "k", "reason": reason, "confirm": true});
    let e = refused(&c, "brain_session_abandon", abandon("r".repeat(1_100))).await;
    assert_eq!(e["code"], "quota_exceeded", "{e}");
    let gone = ok(&c, "brain_session_abandon", abandon("done".into())).await;
    assert_eq!(gone["session"]["status"], "abandoned", "{gone}");
    assert_eq!(bytes_held(&db, "acme").await, past + 5 + 4);
}

//! Black-box: workflows written the way an agent uses the tools, on both
//! stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, ok, refused, spawn_app, token};
use serde_json::{Value, json};

async fn start(c: &Client, key: &str) -> Value {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": key}),
    )
    .await;
    s["session"]["session_id"].clone()
}

fn end(id: &Value, key: &str, body: &str, rev: i64) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": "s",
           "next_focus": body, "expected_focus_revision": rev})
}

/// Two agents read revision 1; one ends first (revision 2); the other ends
/// with a shorter body on revision 1. The refusal is the shrink guard's (it
/// comes first), and it also says the revision is stale and which is
/// current, so the agent knows to read the body it must carry over.
#[tokio::test]
async fn a_shrink_on_a_stale_revision_names_the_current_one() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let first = start(&a, "a").await;
    ok(
        &a,
        "brain_session_end",
        end(&first, "a", &"x".repeat(100), 0),
    )
    .await;
    let sa = start(&a, "a").await;
    let sb = start(&b, "b").await;
    ok(&a, "brain_session_end", end(&sa, "a", &"y".repeat(100), 1)).await;
    let e = refused(&b, "brain_session_end", end(&sb, "b", &"z".repeat(60), 1)).await;
    assert_eq!(e["code"], "base_focus_shrink");
    assert_eq!(e["details"]["stale"], true);
    assert_eq!(e["details"]["current_revision"], 2);
    assert!(
        e["message"].as_str().unwrap().contains("brain_focus_get"),
        "{e}"
    );
    // Following it: read, carry over, end on the current revision.
    let f = ok(&b, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], 2);
    let merged = format!("{}{}", f["body"].as_str().unwrap(), "z".repeat(10));
    let done = ok(&b, "brain_session_end", end(&sb, "b", &merged, 2)).await;
    assert_eq!(done["focus_outcome"], "applied");
}

//! Black-box: arguments that do not fit are `invalid_argument` naming the
//! field, and nothing is written — not even a receipt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{count_rows, ok, refused, spawn_app, token};
use serde_json::{Value, json};

#[tokio::test]
async fn malformed_arguments_name_the_field_and_write_nothing() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let id = s["session"]["session_id"].as_str().unwrap().to_owned();
    let receipts = count_rows(&app, "receipts").await;
    let end = |patch: Value| {
        let mut a = json!({"session_id": id, "expected_client_key": "k", "summary": "s",
                           "next_focus": "n", "expected_focus_revision": 0});
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() {
                a.as_object_mut().unwrap().remove(k);
            } else {
                a[k] = v.clone();
            }
        }
        a
    };
    let big_summary = "s".repeat(32 * 1024 + 1);
    let big_focus = "f".repeat(256 * 1024 + 1);
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "brain_session_end",
            end(json!({"expected_focus_revision": "0"})),
            "expected_focus_revision",
        ),
        (
            "brain_session_end",
            end(json!({"expected_focus_revision": 1.5})),
            "expected_focus_revision",
        ),
        (
            "brain_session_end",
            end(json!({"expected_focus_revision": -1})),
            "expected_focus_revision",
        ),
        (
            "brain_session_end",
            end(json!({"summary": null})),
            "summary",
        ),
        ("brain_session_end", end(json!({"summary": 7})), "summary"),
        (
            "brain_session_end",
            end(json!({"allow_focus_shrink": "yes"})),
            "allow_focus_shrink",
        ),
        (
            "brain_session_end",
            end(json!({"unexpected": 1})),
            "unexpected",
        ),
        (
            "brain_session_end",
            end(json!({"summary": big_summary})),
            "summary",
        ),
        (
            "brain_session_end",
            end(json!({"next_focus": big_focus})),
            "next_focus",
        ),
        (
            "brain_session_end",
            end(json!({"session_id": "sess_123"})),
            "session_id",
        ),
        (
            "brain_session_end",
            end(json!({"session_id": "SESS_0123456789abcdef0123456789abcdef"})),
            "session_id",
        ),
        (
            "brain_session_end",
            end(json!({"session_id": "0123456789abcdef0123456789abcdef"})),
            "session_id",
        ),
        (
            "brain_session_end",
            end(json!({"session_id": "sess_0123456789ABCDEF0123456789abcdef"})),
            "session_id",
        ),
        (
            "brain_session_end",
            end(json!({"session_id": "'; DROP TABLE sessions; --"})),
            "session_id",
        ),
        ("brain_session_get", json!({"session_id": 42}), "session_id"),
        (
            "brain_session_start",
            json!({"project": "has space", "client_key": "k"}),
            "project",
        ),
        (
            "brain_session_start",
            json!({"project": "p".repeat(129), "client_key": "k"}),
            "project",
        ),
        (
            "brain_session_start",
            json!({"project": "p", "client_key": "  "}),
            "client_key",
        ),
        (
            "brain_session_start",
            json!({"project": "p", "client_key": "k".repeat(201)}),
            "client_key",
        ),
        (
            "brain_session_start",
            json!({"project": "p", "client_key": "k", "slot": "s".repeat(65)}),
            "slot",
        ),
        ("brain_session_start", json!({"client_key": "k"}), "project"),
        (
            "brain_remember",
            json!({"project": "p", "kind": "poem", "text": "t"}),
            "kind",
        ),
        (
            "brain_remember",
            json!({"project": "p", "kind": "fact", "text": " "}),
            "text",
        ),
        (
            "brain_remember",
            json!({"project": "p", "kind": "fact", "text": "t".repeat(16 * 1024 + 1)}),
            "text",
        ),
        (
            "brain_remember",
            json!({"project": "p", "kind": "fact", "text": "t", "tags": vec!["x"; 17]}),
            "tags",
        ),
        (
            "brain_remember",
            json!({"project": "p", "kind": "fact", "text": "t", "session_id": id}),
            "expected_client_key",
        ),
        (
            "brain_session_abandon",
            json!({"session_id": id, "expected_client_key": "k", "reason": "r".repeat(4097), "confirm": true}),
            "reason",
        ),
        (
            "brain_focus_get",
            json!({"project": "p", "slot": "bad slot"}),
            "slot",
        ),
    ];
    for (tool, args, field) in cases {
        let e = refused(&c, tool, args).await;
        assert_eq!(e["code"], json!("invalid_argument"), "{tool} {field}");
        assert_eq!(e["status"], json!(422), "{tool} {field}");
        assert_eq!(e["details"]["field"], json!(field), "{tool}: {e}");
    }
    assert_eq!(
        count_rows(&app, "receipts").await,
        receipts,
        "argument errors write no receipt"
    );
    assert_eq!(count_rows(&app, "artifacts").await, 0);
    assert_eq!(count_rows(&app, "focus_history").await, 0);
    let g = ok(&c, "brain_session_get", json!({"session_id": id})).await;
    assert_eq!(g["session"]["status"], json!("open"));
    // The hyphenated UUID form of a session id is accepted.
    let uuid = &id[5..];
    let hyphenated = format!(
        "{}-{}-{}-{}-{}",
        &uuid[..8],
        &uuid[8..12],
        &uuid[12..16],
        &uuid[16..20],
        &uuid[20..]
    );
    let g = ok(&c, "brain_session_get", json!({"session_id": hyphenated})).await;
    assert_eq!(g["session"]["session_id"], json!(id));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn multibyte_focus_is_measured_in_characters() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let start = |key: &str| json!({"project": "p", "client_key": key});
    let a = ok(&c, "brain_session_start", start("a")).await;
    let current = "é漢🦀".repeat(10); // 30 characters, 90 bytes
    ok(
        &c,
        "brain_session_end",
        json!({"session_id": a["session"]["session_id"], "expected_client_key": "a",
        "summary": "s", "next_focus": current, "expected_focus_revision": 0}),
    )
    .await;
    let b = ok(&c, "brain_session_start", start("b")).await;
    // 20 emoji = 80 bytes but 20 characters: under the floor of 21.
    let e = refused(&c, "brain_session_end", json!({"session_id": b["session"]["session_id"],
        "expected_client_key": "b", "summary": "s", "next_focus": "🦀".repeat(20), "expected_focus_revision": 1})).await;
    assert_eq!(
        e["details"],
        json!({"current": 30, "proposed": 20, "floor": 21})
    );
    let out = ok(&c, "brain_session_end", json!({"session_id": b["session"]["session_id"],
        "expected_client_key": "b", "summary": "s", "next_focus": "漢".repeat(21), "expected_focus_revision": 1})).await;
    assert_eq!(out["focus_outcome"], json!("applied"));
    c.cancel().await.unwrap();
}

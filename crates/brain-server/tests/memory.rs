//! Black-box: recall, documents, history, listings, receipts and the briefing
//! (SPEC §2.8, §2.9, §5) through rmcp's client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, ok, refused, spawn_app, token, token_with};
use serde_json::{Value, json};

async fn start(c: &Client, key: &str) -> Value {
    ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": key}),
    )
    .await
}

async fn end(c: &Client, s: &Value, key: &str, focus: &str) -> Value {
    ok(
        c,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": key,
        "summary": format!("summary by {key}"), "next_focus": focus,
        "expected_focus_revision": s["briefing"]["base_focus"]["revision"]}),
    )
    .await
}

#[tokio::test]
async fn recall_finds_ranked_snippets_and_pages() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    for (kind, text) in [
        ("decision", "Use row locks for the ledger"),
        ("fact", "The ledger never forks: ledger tip lock"),
        ("note", "unrelated"),
        ("fact", "Ελληνικά κείμενα για το ledger"),
    ] {
        ok(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": kind, "text": text}),
        )
        .await;
    }
    let r = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "ledger", "limit": 2}),
    )
    .await;
    assert_eq!(r["results"].as_array().unwrap().len(), 2);
    assert!(
        r["results"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("«ledger»")
    );
    let cursor = r["next_cursor"].as_str().unwrap().to_owned();
    let r2 = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "ledger", "limit": 2, "cursor": cursor}),
    )
    .await;
    assert_eq!(r2["results"].as_array().unwrap().len(), 1);
    assert_eq!(r2["next_cursor"], Value::Null);
    let facts = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "ledger", "kinds": ["fact"]}),
    )
    .await;
    assert_eq!(facts["results"].as_array().unwrap().len(), 2);
    let greek = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "κείμενα"}),
    )
    .await;
    assert_eq!(greek["results"].as_array().unwrap().len(), 1);
    let e = refused(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "ledger", "limit": 51}),
    )
    .await;
    assert_eq!(
        (e["code"].clone(), e["details"]["field"].clone()),
        (json!("invalid_argument"), json!("limit"))
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn documents_feed_the_briefing() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let state = json!({"objective": "ship brain", "missions": ["ledger integrity", {"title": "recall quality"}],
                       "pending_decisions": ["sqlite or postgres"]}).to_string();
    let put = ok(&c, "brain_document_put", json!({"project": "p", "document": "executive_state", "body": state, "expected_revision": 0})).await;
    assert_eq!(put["document"]["revision"], json!(1));
    let e = refused(&c, "brain_document_put", json!({"project": "p", "document": "executive_state", "body": state, "expected_revision": 0})).await;
    assert_eq!(
        (
            e["code"].clone(),
            e["status"].clone(),
            e["details"]["current_revision"].clone()
        ),
        (json!("document_conflict"), json!(409), json!(1))
    );
    let e = refused(&c, "brain_document_put", json!({"project": "p", "document": "executive_state", "body": "{}", "expected_revision": 1})).await;
    assert_eq!(e["code"], json!("invalid_argument"));
    let e = refused(&c, "brain_document_put", json!({"project": "p", "document": "mental_model", "name": "m", "body": "x", "expected_revision": 0})).await;
    assert_eq!(e["code"], json!("forbidden"));
    let op = app
        .client(&token_with(
            json!({"tenant": "acme", "sub": "op", "role": "operator"}),
        ))
        .await;
    ok(&op, "brain_document_put", json!({"project": "p", "document": "mental_model", "name": "reviewer", "body": "be strict", "expected_revision": 0})).await;
    ok(&c, "brain_document_put", json!({"project": "p", "document": "sync_note", "body": "agent B owns the UI", "expected_revision": 0})).await;
    let got = ok(
        &c,
        "brain_document_get",
        json!({"project": "p", "document": "sync_note"}),
    )
    .await;
    assert_eq!(got["document"]["body"], json!("agent B owns the UI"));
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "fact", "text": "ledger integrity is checked by verify"}),
    )
    .await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "the ledger is append-only"}),
    )
    .await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "todo", "text": "improve recall quality"}),
    )
    .await;
    let b = start(&c, "k").await["briefing"].clone();
    assert_eq!(b["executive_state"]["objective"], json!("ship brain"));
    assert_eq!(b["recall"][0]["mission"], json!("ledger integrity"));
    // Any word of the mission matches; the artifact matching both ranks first.
    let hits = b["recall"][0]["artifacts"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[0]["artifact"]["text"],
        json!("ledger integrity is checked by verify")
    );
    assert_eq!(b["recall"][1]["mission"], json!("recall quality"));
    assert_eq!(b["inbox_count"], json!(1));
    assert_eq!(b["sync_note"], json!("agent B owns the UI"));
    assert_eq!(
        b["mental_models"],
        json!([{"name": "reviewer", "body": "be strict", "truncated": false}])
    );
    assert_eq!(b["brief"], Value::Null);
    // The scheduler's brief appears in the next briefing.
    assert_eq!(
        app.store
            .generate_daily_briefs(chrono::Utc::now())
            .await
            .unwrap(),
        1
    );
    let b = start(&c, "k2").await["briefing"].clone();
    assert_eq!(b["brief"]["stale"], json!(false));
    assert!(
        b["brief"]["body"]
            .as_str()
            .unwrap()
            .starts_with("Daily brief for p")
    );
    c.cancel().await.unwrap();
    op.cancel().await.unwrap();
}

#[tokio::test]
async fn history_lists_and_receipts_page() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    for (i, focus) in ["one", "one\ntwo", "one\ntwo\nthree"].iter().enumerate() {
        let s = start(&c, &format!("k{i}")).await;
        end(&c, &s, &format!("k{i}"), focus).await;
    }
    let open = start(&c, "still-open").await;
    let h = ok(
        &c,
        "brain_focus_history",
        json!({"project": "p", "limit": 2}),
    )
    .await;
    let entries = h["entries"].as_array().unwrap();
    assert_eq!(
        entries
            .iter()
            .map(|e| e["revision"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [3, 2]
    );
    assert!(entries[0]["diff"].as_str().unwrap().contains("+three"));
    // A list carries sizes, not bodies.
    assert_eq!(
        entries[0]["body_chars"],
        json!("one\ntwo\nthree".chars().count())
    );
    assert!(entries[0].get("body").is_none());
    assert_eq!(h["next_before"], json!(2));
    let older = ok(
        &c,
        "brain_focus_history",
        json!({"project": "p", "limit": 2, "before_revision": 2}),
    )
    .await;
    assert_eq!(older["entries"][0]["revision"], json!(1));
    assert!(
        older["entries"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+one")
    );
    assert_eq!(older["next_before"], Value::Null);
    let listed = ok(
        &c,
        "brain_session_list",
        json!({"project": "p", "status": "open"}),
    )
    .await;
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(
        listed["sessions"][0]["session"]["session_id"],
        open["session"]["session_id"]
    );
    assert_eq!(listed["sessions"][0]["idle"], json!(false));
    let page = ok(
        &c,
        "brain_session_list",
        json!({"project": "p", "limit": 3}),
    )
    .await;
    let next = page["next_cursor"].as_str().unwrap().to_owned();
    let page2 = ok(
        &c,
        "brain_session_list",
        json!({"project": "p", "limit": 3, "cursor": next}),
    )
    .await;
    assert_eq!(page2["sessions"].as_array().unwrap().len(), 1);
    let r = ok(&c, "brain_receipts", json!({"limit": 3})).await;
    assert_eq!(r["receipts"].as_array().unwrap().len(), 3);
    assert_eq!(r["next_since"], json!(3));
    let rest = ok(&c, "brain_receipts", json!({"since_seq": 3})).await;
    let last = rest["receipts"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(rest["ledger_tip"]["seq"], last["seq"]);
    assert_eq!(rest["ledger_tip"]["hash"], last["hash"]);
    let mine = ok(
        &c,
        "brain_receipts",
        json!({"session_id": open["session"]["session_id"]}),
    )
    .await;
    assert_eq!(mine["receipts"].as_array().unwrap().len(), 1);
    // Another tenant sees none of it.
    let other = app.client(&token("globex", "agent")).await;
    let r = ok(&other, "brain_receipts", json!({})).await;
    assert_eq!(r["receipts"], json!([]));
    assert_eq!(r["ledger_tip"]["seq"], json!(0));
    c.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

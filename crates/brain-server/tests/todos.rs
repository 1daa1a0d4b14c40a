//! Black-box: acknowledging todos (SPEC §2.7) and filtering recall by tags, on
//! both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{ok, refused, spawn_app, token};
use serde_json::{Value, json};

async fn inbox(c: &brain_testkit::app::Client) -> Value {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    s["briefing"]["inbox_count"].clone()
}

#[tokio::test]
async fn todos_leave_the_inbox_once_acknowledged() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let mut todos = Vec::new();
    for t in ["write the docs", "fix the flaky test"] {
        let a = ok(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": "todo", "text": t}),
        )
        .await;
        todos.push(a["artifact"]["artifact_id"].as_str().unwrap().to_owned());
    }
    let fact = ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "fact", "text": "f"}),
    )
    .await;
    let fact = fact["artifact"]["artifact_id"].as_str().unwrap().to_owned();
    assert_eq!(inbox(&c).await, json!(2));

    let receipts = |v: &Value| v["receipts"].as_array().unwrap().len();
    let before = receipts(&ok(&c, "brain_receipts", json!({"limit": 100})).await);
    let out = ok(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [todos[0], fact], "note": "done in #12"}),
    )
    .await;
    assert_eq!(out["acknowledged"], json!([todos[0]]));
    assert_eq!(out["not_todos"], json!([fact]));
    assert_eq!(out["inbox_count"], json!(1));
    assert_eq!(inbox(&c).await, json!(1));
    let after = receipts(&ok(&c, "brain_receipts", json!({"limit": 100})).await);
    assert_eq!(
        after,
        before + 2,
        "one receipt for the ack (and one for the start)"
    );
    // Repeating changes nothing more.
    let again = ok(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [todos[0]]}),
    )
    .await;
    assert_eq!(again["acknowledged"], json!([]));
    assert_eq!(again["already_acknowledged"], json!([todos[0]]));
    assert_eq!(again["inbox_count"], json!(1));
    // The acknowledgement is on the artifact: when, and the note.
    let listed = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "kinds": ["todo"]}),
    )
    .await;
    let by_id = |id: &str| {
        listed["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| &h["artifact"])
            .find(|a| a["artifact_id"] == json!(id))
            .cloned()
            .unwrap()
    };
    let acked = by_id(&todos[0]);
    assert_eq!(acked["ack_note"], json!("done in #12"));
    assert!(acked["acknowledged_at"].as_str().unwrap().ends_with('Z'));
    let open = by_id(&todos[1]);
    assert_eq!(open["acknowledged_at"], Value::Null);
    assert_eq!(open["ack_note"], Value::Null);
    // Another tenant's id, or another project's, is not a todo of this project.
    let other = app.client(&token("globex", "g")).await;
    let out = ok(
        &other,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [todos[1]]}),
    )
    .await;
    assert_eq!(out["not_todos"], json!([todos[1]]));
    assert_eq!(
        inbox(&c).await,
        json!(1),
        "globex acknowledged nothing of acme's"
    );
    // Bad input: 0 or 51 ids, a malformed id.
    for ids in [
        json!([]),
        json!(vec![todos[0].clone(); 51]),
        json!(["nope"]),
    ] {
        let e = refused(
            &c,
            "brain_todo_ack",
            json!({"project": "p", "artifact_ids": ids}),
        )
        .await;
        assert_eq!(e["code"], json!("invalid_argument"));
    }
    other.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

/// `session_id` narrows recall to one session's ledger (what brain_session_get
/// only counts), and receipts read newest first below `before_seq`.
#[tokio::test]
async fn recall_lists_a_sessions_ledger_and_receipts_read_newest_first() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let start = |key: &'static str| {
        let c = &c;
        async move {
            let s = ok(
                c,
                "brain_session_start",
                json!({"project": "p", "client_key": key}),
            )
            .await;
            s["session"]["session_id"].as_str().unwrap().to_owned()
        }
    };
    let (s1, s2) = (start("k1").await, start("k2").await);
    let mut mine = Vec::new();
    for (sid, key, text) in [
        (Some(&s1), "k1", "alpha finding"),
        (Some(&s2), "k2", "alpha elsewhere"),
        (Some(&s1), "k1", "beta finding"),
        (None, "", "alpha loose"),
    ] {
        let mut args = json!({"project": "p", "kind": "note", "text": text});
        if let Some(sid) = sid {
            args["session_id"] = json!(sid);
            args["expected_client_key"] = json!(key);
        }
        let a = ok(&c, "brain_remember", args).await;
        if sid == Some(&s1) {
            mine.push(a["artifact"]["artifact_id"].as_str().unwrap().to_owned());
        }
    }
    let ids = |v: &Value| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["artifact"]["artifact_id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let ledger = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "session_id": s1}),
    )
    .await;
    assert_eq!(
        ids(&ledger),
        [mine[1].clone(), mine[0].clone()],
        "newest first, s1's only"
    );
    let searched = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "session_id": s1, "query": "alpha"}),
    )
    .await;
    assert_eq!(ids(&searched), [mine[0].clone()]);
    // Another tenant naming the session sees nothing of it.
    let other = app.client(&token("globex", "g")).await;
    let theirs = ok(
        &other,
        "brain_recall",
        json!({"project": "p", "session_id": s1}),
    )
    .await;
    assert_eq!(ids(&theirs), Vec::<String>::new());
    let e = refused(
        &c,
        "brain_recall",
        json!({"project": "p", "session_id": "sess_nope"}),
    )
    .await;
    assert_eq!(e["code"], json!("invalid_argument"));

    // Receipts: two starts and three session-bound remembers and one loose: 6.
    let seqs = |v: &Value| {
        v["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["seq"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    let newest = ok(
        &c,
        "brain_receipts",
        json!({"before_seq": 1000, "limit": 4}),
    )
    .await;
    assert_eq!(seqs(&newest), [6, 5, 4, 3]);
    assert_eq!(newest["next_before"], json!(3));
    assert_eq!(newest["next_since"], Value::Null);
    let rest = ok(&c, "brain_receipts", json!({"before_seq": 3, "limit": 4})).await;
    assert_eq!(seqs(&rest), [2, 1]);
    assert_eq!(rest["next_before"], Value::Null);
    // Both bounds: newest first between them, and no cursor to an empty page.
    let window = ok(
        &c,
        "brain_receipts",
        json!({"since_seq": 2, "before_seq": 6, "limit": 3}),
    )
    .await;
    assert_eq!(seqs(&window), [5, 4, 3]);
    assert_eq!(window["next_before"], Value::Null);
    let oldest = ok(&c, "brain_receipts", json!({"limit": 4})).await;
    assert_eq!(seqs(&oldest), [1, 2, 3, 4]);
    assert_eq!(oldest["next_since"], json!(4));
    assert_eq!(oldest["next_before"], Value::Null);
    let e = refused(&c, "brain_receipts", json!({"before_seq": 0})).await;
    assert_eq!(e["code"], json!("invalid_argument"));
    other.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

/// A recall without a query lists newest first; `inbox` keeps the todos not
/// yet acknowledged, the ones the briefing's inbox_count counts.
#[tokio::test]
async fn recall_without_a_query_lists_newest_first_and_the_inbox() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let long = "x".repeat(250);
    let mut ids = Vec::new();
    for (kind, text) in [
        ("todo", "first todo"),
        ("fact", "a fact"),
        ("todo", "second todo"),
        ("todo", long.as_str()),
    ] {
        let a = ok(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": kind, "text": text}),
        )
        .await;
        ids.push(a["artifact"]["artifact_id"].as_str().unwrap().to_owned());
    }
    ok(
        &c,
        "brain_remember",
        json!({"project": "q", "kind": "todo", "text": "another project's todo"}),
    )
    .await;
    let listed = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["artifact"]["artifact_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    let all = ok(&c, "brain_recall", json!({"project": "p"})).await;
    assert_eq!(listed(&all), newest_first);
    assert!(
        all["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["rank"] == json!(1.0))
    );
    // The snippet is the text's start: whole when short, cut at 200 characters.
    assert_eq!(all["results"][3]["snippet"], json!("first todo"));
    assert_eq!(
        all["results"][0]["snippet"],
        json!(format!("{}…", "x".repeat(200)))
    );

    ok(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [ids[0]], "note": "done"}),
    )
    .await;
    let inbox = ok(&c, "brain_recall", json!({"project": "p", "inbox": true})).await;
    assert_eq!(listed(&inbox), vec![ids[3].clone(), ids[2].clone()]);
    // With a query the inbox narrows a search; acknowledged todos are still found without it.
    let hit = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "inbox": true, "query": "todo"}),
    )
    .await;
    assert_eq!(listed(&hit), vec![ids[2].clone()]);
    let found = ok(&c, "brain_recall", json!({"project": "p", "query": "todo"})).await;
    assert_eq!(listed(&found).len(), 2);
    let facts = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "kinds": ["fact"]}),
    )
    .await;
    assert_eq!(listed(&facts), vec![ids[1].clone()]);
    // Pages follow next_cursor to the end.
    let first = ok(&c, "brain_recall", json!({"project": "p", "limit": 3})).await;
    assert_eq!(listed(&first), newest_first[..3].to_vec());
    let rest = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "limit": 3, "cursor": first["next_cursor"]}),
    )
    .await;
    assert_eq!(listed(&rest), newest_first[3..].to_vec());
    assert_eq!(rest["next_cursor"], Value::Null);
    // Another project lists its own artifact only (and p's lists above hold none of q's).
    let q = ok(&c, "brain_recall", json!({"project": "q"})).await;
    assert_eq!(q["results"].as_array().map(Vec::len), Some(1));
    assert_eq!(q["results"][0]["artifact"]["project"], json!("q"));
    // Paging the inbox while acknowledging it skips nothing: the cursor is a
    // keyset, not an offset.
    let one = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "inbox": true, "limit": 1}),
    )
    .await;
    assert_eq!(listed(&one), vec![ids[3].clone()]);
    ok(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [ids[3]], "note": "done"}),
    )
    .await;
    let two = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "inbox": true, "limit": 1, "cursor": one["next_cursor"]}),
    )
    .await;
    assert_eq!(listed(&two), vec![ids[2].clone()]);
    let e = refused(&c, "brain_recall", json!({"project": "p", "cursor": "7"})).await;
    assert_eq!(e["details"]["field"], json!("cursor"));
    // Another tenant lists nothing of acme's.
    let other = app.client(&token("globex", "g")).await;
    let none = ok(&other, "brain_recall", json!({"project": "p"})).await;
    assert!(listed(&none).is_empty());
    // A query given must still say something.
    let e = refused(&c, "brain_recall", json!({"project": "p", "query": "  "})).await;
    assert_eq!(e["details"]["field"], json!("query"));
    other.cancel().await.unwrap();
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn recall_filters_by_tags() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    for (text, tags) in [
        ("deploy with compose", json!(["ops", "docker"])),
        ("deploy with kubernetes", json!(["ops", "k8s"])),
        ("deploy notes for the team", json!([])),
    ] {
        ok(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": "note", "text": text, "tags": tags}),
        )
        .await;
    }
    let texts = |v: &Value| -> Vec<String> {
        let mut t: Vec<String> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["artifact"]["text"].as_str().unwrap().to_owned())
            .collect();
        t.sort();
        t
    };
    let all = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "deploy"}),
    )
    .await;
    assert_eq!(texts(&all).len(), 3);
    let ops = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "deploy", "tags": ["ops"]}),
    )
    .await;
    assert_eq!(
        texts(&ops),
        vec!["deploy with compose", "deploy with kubernetes"]
    );
    let both = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "deploy", "tags": ["ops", "k8s"]}),
    )
    .await;
    assert_eq!(texts(&both), vec!["deploy with kubernetes"]);
    let none = ok(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "deploy", "tags": ["nope"]}),
    )
    .await;
    assert!(texts(&none).is_empty());
    c.cancel().await.unwrap();
}

/// The agent surface's refusals come early, plainly, and write nothing.
#[tokio::test]
async fn surface_refusals_are_early_and_plain() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let code = |v: &Value| v["code"].as_str().unwrap_or("").to_owned();
    let e = refused(
        &c,
        "brain_document_get",
        json!({"project": "p", "document": "mental_model"}),
    )
    .await;
    assert_eq!(code(&e), "invalid_argument");
    let e = refused(
        &c,
        "brain_document_get",
        json!({"project": "p", "document": "critique", "name": "x"}),
    )
    .await;
    assert_eq!(code(&e), "invalid_argument");
    let e = refused(&c, "brain_receipts", json!({"since_seq": -1})).await;
    assert_eq!(e["details"]["field"], json!("since_seq"));
    let e = refused(&c, "brain_todo_ack", json!({"project": "p", "artifact_ids": ["art_00000000000000000000000000000000"], "note": "  "})).await;
    assert_eq!(e["details"]["field"], json!("note"));
    // Every missing argument at once, said plainly.
    let e = refused(
        &c,
        "brain_session_end",
        json!({"session_id": "sess_00000000000000000000000000000000"}),
    )
    .await;
    let missing = e["details"]["missing"].as_array().unwrap().len();
    assert_eq!(missing, 4, "{e}");
    assert!(!e["message"].as_str().unwrap().contains('`'), "{e}");
    let e = refused(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": 5}),
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("must be a string"),
        "{e}"
    );

    // A relay to a key that can never open a session is refused before the slot is written.
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k", "slot": "s"}),
    )
    .await;
    let sid = s["session"]["session_id"].clone();
    let e = refused(&c, "brain_session_relay", json!({"session_id": sid, "expected_client_key": "k",
        "summary": "s", "next_focus": "body", "expected_focus_revision": 0, "to_client_key": "x\u{202e}y"})).await;
    assert_eq!(e["details"]["field"], json!("to_client_key"));
    let f = ok(&c, "brain_focus_get", json!({"project": "p", "slot": "s"})).await;
    assert_eq!(f["revision"], json!(0), "the slot was not written");
    let got = ok(&c, "brain_session_get", json!({"session_id": sid})).await;
    assert_eq!(got["session"]["status"], json!("open"));

    // Ends carry each body once; lists leave bodies out.
    let out = ok(
        &c,
        "brain_session_end",
        json!({"session_id": sid, "expected_client_key": "k",
        "summary": "s", "next_focus": "the new slot body", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(out["focus_at_end"]["body"], json!("the new slot body"));
    assert_eq!(out["current_focus"], Value::Null);
    assert_eq!(out["session"]["next_focus"], Value::Null);
    // The base focus read lists the project's slots.
    let base = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(base["slots"], json!([{"name": "s", "revision": 1}]));
    // ... in the same read as the base focus, whose body is not the slot's.
    assert_eq!((&base["body"], &base["revision"]), (&json!(""), &json!(0)));
    let one = ok(&c, "brain_focus_get", json!({"project": "p", "slot": "s"})).await;
    assert_eq!(one["slots"], Value::Null);
    assert_eq!(one["body"], json!("the new slot body"));
    let listed = ok(&c, "brain_session_list", json!({"project": "p"})).await;
    let item = &listed["sessions"][0];
    assert_eq!(item["session"]["next_focus"], Value::Null);
    assert_eq!(item["next_focus_chars"], json!(17));
    c.cancel().await.unwrap();
}

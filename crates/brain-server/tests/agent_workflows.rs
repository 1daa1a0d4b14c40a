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

fn ids(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_str().unwrap().to_owned())
        .collect()
}

/// An agent unsure of a project's name lists them: by name, with a prefix,
/// page by page, and never another tenant's or the server's own.
#[tokio::test]
async fn projects_are_listed_by_name_and_prefix() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let other = app.client(&token("globex", "g")).await;
    for p in ["beta", "alpha/web", "alpha"] {
        ok(
            &a,
            "brain_session_start",
            json!({"project": p, "client_key": "a"}),
        )
        .await;
    }
    ok(
        &a,
        "brain_session_start",
        json!({"project": "alpha", "client_key": "a", "slot": "ui"}),
    )
    .await;
    ok(
        &other,
        "brain_session_start",
        json!({"project": "gamma", "client_key": "g"}),
    )
    .await;

    let all = ok(&a, "brain_project_list", json!({})).await;
    assert_eq!(
        ids(&all["projects"], "project"),
        ["alpha", "alpha/web", "beta"]
    );
    assert!(all["next_cursor"].is_null());
    let alpha = &all["projects"][0];
    assert_eq!(alpha["base_revision"], 0);
    assert_eq!(alpha["slots"], 1);
    assert_eq!(alpha["open_sessions"], 2);
    assert!(alpha["last_activity_at"].is_string());

    let pre = ok(&a, "brain_project_list", json!({"prefix": "alpha"})).await;
    assert_eq!(ids(&pre["projects"], "project"), ["alpha", "alpha/web"]);

    let first = ok(&a, "brain_project_list", json!({"limit": 2})).await;
    assert_eq!(ids(&first["projects"], "project"), ["alpha", "alpha/web"]);
    let next = ok(
        &a,
        "brain_project_list",
        json!({"limit": 2, "cursor": first["next_cursor"]}),
    )
    .await;
    assert_eq!(ids(&next["projects"], "project"), ["beta"]);

    let e = refused(&a, "brain_project_list", json!({"prefix": "no spaces"})).await;
    assert_eq!(e["code"], "invalid_argument");
}

/// A relay's receiver finds the session opened for it in one call, and the
/// two sessions name each other.
#[tokio::test]
async fn a_relay_receiver_finds_its_session_in_one_call() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let s = ok(
        &a,
        "brain_session_start",
        json!({"project": "p", "client_key": "a", "slot": "build"}),
    )
    .await;
    let sid = s["session"]["session_id"].clone();
    // Another open session on the same slot, by someone else, to be filtered out.
    ok(
        &b,
        "brain_session_start",
        json!({"project": "p", "client_key": "c", "slot": "build"}),
    )
    .await;
    let relayed = ok(
        &a,
        "brain_session_relay",
        json!({"session_id": sid, "expected_client_key": "a", "summary": "half done",
               "next_focus": "next: the tests", "expected_focus_revision": 0,
               "to_client_key": "b"}),
    )
    .await;
    let new_id = relayed["new_session"]["session_id"].clone();
    assert_eq!(relayed["session"]["relayed_to"], new_id);
    assert_eq!(relayed["new_session"]["relayed_from"], sid);
    assert_eq!(relayed["new_session"]["read_revision"], 1);

    // The receiver, knowing only the project, slot and its own key.
    let found = ok(
        &b,
        "brain_session_list",
        json!({"project": "p", "slot": "build", "client_key": "b", "status": "open"}),
    )
    .await;
    let sessions = found["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{found}");
    let mine = &sessions[0]["session"];
    assert_eq!(mine["session_id"], new_id);
    assert_eq!(mine["relayed_from"], sid);
    assert_eq!(mine["read_revision"], 1);
    // And the relayed session, read later, names its successor.
    let old = ok(&b, "brain_session_get", json!({"session_id": sid})).await;
    assert_eq!(old["session"]["relayed_to"], new_id);
    assert_eq!(old["session"]["status"], "relayed");
    // Each filter applies on its own too.
    let by_slot = ok(
        &b,
        "brain_session_list",
        json!({"project": "p", "slot": "build"}),
    )
    .await;
    assert_eq!(by_slot["sessions"].as_array().unwrap().len(), 3);
    let by_key = ok(
        &b,
        "brain_session_list",
        json!({"project": "p", "client_key": "c"}),
    )
    .await;
    assert_eq!(by_key["sessions"].as_array().unwrap().len(), 1);
}

/// A bound agent restarts: resume tells it the slot revision it read (not
/// the base focus's), so it can tell its view is stale.
#[tokio::test]
async fn a_restarted_bound_agent_recovers_the_revision_it_read() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    // The base focus moves to 1, the slot to 2.
    let first = start(&a, "a").await;
    ok(&a, "brain_session_end", end(&first, "a", "base", 0)).await;
    for rev in 0..2 {
        let s = ok(
            &b,
            "brain_session_start",
            json!({"project": "p", "client_key": "b", "slot": "ui"}),
        )
        .await;
        let id = s["session"]["session_id"].clone();
        ok(
            &b,
            "brain_session_end",
            end(&id, "b", &format!("ui v{}", rev + 1), rev),
        )
        .await;
    }
    // The agent starts bound, reading slot revision 2.
    let s = ok(
        &a,
        "brain_session_start",
        json!({"project": "p", "client_key": "a", "slot": "ui"}),
    )
    .await;
    let id = s["session"]["session_id"].clone();
    assert_eq!(s["session"]["started_focus_revision"], 1);
    assert_eq!(s["session"]["read_revision"], 2);
    // Someone else moves the slot on while the agent is down.
    let o = ok(
        &b,
        "brain_session_start",
        json!({"project": "p", "client_key": "b", "slot": "ui"}),
    )
    .await;
    let oid = o["session"]["session_id"].clone();
    ok(&b, "brain_session_end", end(&oid, "b", "ui v3", 2)).await;
    // Restarted, on a new connection, it resumes and learns what it read.
    let again = app.client(&token("acme", "a")).await;
    let r = ok(
        &again,
        "brain_session_resume",
        json!({"session_id": id, "expected_client_key": "a"}),
    )
    .await;
    assert_eq!(r["session"]["read_revision"], 2);
    assert_eq!(r["slot"]["revision"], 3, "{r}");
    // Ending on what it read is a conflict, not an overwrite of v3.
    let e = ok(&again, "brain_session_end", end(&id, "a", "ui mine", 2)).await;
    assert_eq!(e["focus_outcome"], "conflict");
    let slot = ok(
        &again,
        "brain_focus_get",
        json!({"project": "p", "slot": "ui"}),
    )
    .await;
    assert_eq!(slot["body"], "ui v3");

    // bind records what it read as well.
    let u = start(&a, "a").await;
    let got = ok(&a, "brain_session_get", json!({"session_id": u})).await;
    assert_eq!(got["session"]["read_revision"], 1);
    let bound = ok(
        &a,
        "brain_session_bind",
        json!({"session_id": u, "expected_client_key": "a", "slot": "ui"}),
    )
    .await;
    assert_eq!(bound["slot"]["revision"], 3);
    let got = ok(&a, "brain_session_get", json!({"session_id": u})).await;
    assert_eq!(got["session"]["read_revision"], 3);
}

/// One word for one thing: documents are read and written by `kind`, the
/// executive state can be given as an object, the newest receipts need no
/// magic number.
#[tokio::test]
async fn documents_and_receipts_speak_one_vocabulary() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let state = json!({"objective": "ship", "missions": ["docs"], "pending_decisions": []});
    let put = ok(
        &a,
        "brain_document_put",
        json!({"project": "p", "kind": "executive_state", "body": state, "expected_revision": 0}),
    )
    .await;
    assert_eq!(put["document"]["kind"], "executive_state");
    assert_eq!(put["document"]["revision"], 1);
    let got = ok(
        &a,
        "brain_document_get",
        json!({"project": "p", "kind": "executive_state"}),
    )
    .await;
    let body: Value = serde_json::from_str(got["document"]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["objective"], "ship");
    // The earlier spelling still works, as text.
    ok(
        &a,
        "brain_document_put",
        json!({"project": "p", "document": "critique", "body": "too slow", "expected_revision": 0}),
    )
    .await;
    // An object is for the executive state only; nothing is written.
    let e = refused(
        &a,
        "brain_document_put",
        json!({"project": "p", "kind": "sync_note", "body": {"a": 1}, "expected_revision": 0}),
    )
    .await;
    assert_eq!(e["code"], "invalid_argument");
    let note = ok(
        &a,
        "brain_document_get",
        json!({"project": "p", "kind": "sync_note"}),
    )
    .await;
    assert_eq!(note["document"]["revision"], 0);

    // Receipts: the newest page first, by asking for it.
    let oldest = ok(&a, "brain_receipts", json!({})).await;
    let tip = oldest["ledger_tip"]["seq"].as_i64().unwrap();
    assert!(tip >= 2, "{oldest}");
    let newest = ok(&a, "brain_receipts", json!({"order": "newest", "limit": 2})).await;
    let seqs: Vec<i64> = newest["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [tip, tip - 1]);
    let e = refused(
        &a,
        "brain_receipts",
        json!({"order": "oldest", "before_seq": 2}),
    )
    .await;
    assert_eq!(e["code"], "invalid_argument");
}

/// A new name creates a project: start and remember say so, so an agent
/// that mistyped a name learns it at once; the next call to it does not.
#[tokio::test]
async fn a_call_that_creates_a_project_says_so() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let first = ok(
        &a,
        "brain_session_start",
        json!({"project": "payments", "client_key": "a"}),
    )
    .await;
    assert_eq!(first["created_project"], true);
    let again = ok(
        &a,
        "brain_session_start",
        json!({"project": "payments", "client_key": "a"}),
    )
    .await;
    assert_eq!(again["created_project"], false);

    let note = json!({"project": "paymnets", "kind": "note", "text": "typo"});
    let typo = ok(&a, "brain_remember", note.clone()).await;
    assert_eq!(typo["created_project"], true);
    assert_eq!(typo["artifact"]["project"], "paymnets");
    assert_eq!(
        ok(&a, "brain_remember", note).await["created_project"],
        false
    );
    let known = ok(
        &a,
        "brain_remember",
        json!({"project": "payments", "kind": "note", "text": "fine"}),
    )
    .await;
    assert_eq!(known["created_project"], false);

    // Another tenant's same name is its own new project.
    let g = app.client(&token("globex", "g")).await;
    let theirs = ok(
        &g,
        "brain_session_start",
        json!({"project": "payments", "client_key": "g"}),
    )
    .await;
    assert_eq!(theirs["created_project"], true);
}

//! Black-box: a focus body is stored once (issue 40). A close that writes a
//! body writes it as the history row of the revision it makes; the focus row
//! names that revision and holds no text of its own (NULL on PostgreSQL, ''
//! on SQLite). Every read gives the body back: the focus read, a start's
//! briefing and its slot, a close's decision on the next end, an export. On
//! both stores; the rows are read from the database itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{
    Client, TestApp, TestBackend, count_rows, exec, ok, refused, run_migration, spawn_app, token,
};
use serde_json::{Value, json};

async fn start(c: &Client, key: &str, slot: Option<&str>) -> Value {
    let mut args = json!({"project": "p", "client_key": key});
    if let Some(slot) = slot {
        args["slot"] = json!(slot);
    }
    ok(c, "brain_session_start", args).await
}

fn id(started: &Value) -> &str {
    started["session"]["session_id"].as_str().unwrap()
}

fn end(id: &str, key: &str, body: &str, rev: i64) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": "done",
           "next_focus": body, "expected_focus_revision": rev})
}

/// The focus rows of `slot` at `revision` that hold no text of their own.
async fn named_only(app: &TestApp, slot: &str, revision: i64) -> i64 {
    let empty = match &app.db {
        TestBackend::Postgres(_) => "body IS NULL",
        TestBackend::Sqlite(_) => "body = ''",
    };
    count_rows(
        app,
        &format!("focus_bodies WHERE slot = '{slot}' AND revision = {revision} AND {empty}"),
    )
    .await
}

/// The history rows of `slot` at `revision` holding `body`.
async fn history(app: &TestApp, slot: &str, revision: i64, body: &str) -> i64 {
    count_rows(
        app,
        &format!(
            "focus_history WHERE slot = '{slot}' AND revision = {revision} AND body = '{body}'"
        ),
    )
    .await
}

async fn focus(c: &Client, slot: Option<&str>) -> (Value, Value) {
    let mut args = json!({"project": "p"});
    if let Some(slot) = slot {
        args["slot"] = json!(slot);
    }
    let f = ok(c, "brain_focus_get", args).await;
    (f["body"].clone(), f["revision"].clone())
}

#[tokio::test]
async fn an_applied_end_stores_its_body_once() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let body = "goal: ship the importer\nowner: ana\n".repeat(20);

    let s = start(&a, "a", None).await;
    let out = ok(&a, "brain_session_end", end(id(&s), "a", &body, 0)).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    assert_eq!(named_only(&app, "", 1).await, 1);
    assert_eq!(history(&app, "", 1, &body).await, 1);
    assert_eq!(focus(&a, None).await, (json!(body), json!(1)));
    // The next start's briefing reads it, and its end is decided on it: a
    // body far shorter than the stored one is refused by the shrink floor,
    // which an empty read would let through.
    let next = start(&a, "a", None).await;
    assert_eq!(
        next["briefing"]["base_focus"],
        json!({"body": body, "revision": 1})
    );
    let e = refused(&a, "brain_session_end", end(id(&next), "a", "tiny", 1)).await;
    assert_eq!(e["code"], "base_focus_shrink", "{e}");
    assert_eq!(e["details"]["current"], body.chars().count(), "{e}");
    let second = format!("{body}next: review\n");
    let out = ok(&a, "brain_session_end", end(id(&next), "a", &second, 1)).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    assert_eq!(named_only(&app, "", 2).await, 1);
    assert_eq!(history(&app, "", 2, &second).await, 1);
    assert_eq!(focus(&a, None).await, (json!(second), json!(2)));

    // A session bound to a slot: the slot's row and history, its start.
    let bound = start(&a, "a", Some("ui")).await;
    let out = ok(&a, "brain_session_end", end(id(&bound), "a", "the ui", 0)).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    assert_eq!(named_only(&app, "ui", 1).await, 1);
    assert_eq!(history(&app, "ui", 1, "the ui").await, 1);
    assert_eq!(focus(&a, Some("ui")).await, (json!("the ui"), json!(1)));
    let again = start(&a, "a", Some("ui")).await;
    assert_eq!(again["slot"]["body"], "the ui", "{again}");

    // A relay writes its body the same way.
    let mut args = end(id(&again), "a", "handed over", 1);
    args["to_client_key"] = json!("b");
    let out = ok(&a, "brain_session_relay", args).await;
    assert_eq!(out["session"]["status"], "relayed", "{out}");
    assert_eq!(named_only(&app, "ui", 2).await, 1);
    assert_eq!(history(&app, "ui", 2, "handed over").await, 1);
    assert_eq!(
        focus(&a, Some("ui")).await,
        (json!("handed over"), json!(2))
    );

    // Nothing else in the project holds a copy.
    assert_eq!(
        count_rows(&app, "focus_bodies WHERE COALESCE(body, '') <> ''").await,
        0
    );
}

/// A merge takes PostgreSQL's locked close, whose body reaches the history
/// row with the receipt placed at the commit.
#[tokio::test]
async fn a_merged_end_stores_its_body_once() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let first = start(&a, "a", None).await;
    ok(
        &a,
        "brain_session_end",
        end(id(&first), "a", "one\ntwo\nthree\n", 0),
    )
    .await;
    let sa = start(&a, "a", None).await;
    let sb = start(&b, "b", None).await;
    ok(
        &a,
        "brain_session_end",
        end(id(&sa), "a", "ONE\ntwo\nthree\n", 1),
    )
    .await;
    let mut args = end(id(&sb), "b", "one\ntwo\nTHREE\n", 1);
    args["merge"] = json!(true);
    let out = ok(&b, "brain_session_end", args).await;
    assert_eq!(out["focus_outcome"], "merged", "{out}");
    assert_eq!(named_only(&app, "", 3).await, 1);
    assert_eq!(history(&app, "", 3, "ONE\ntwo\nTHREE\n").await, 1);
    assert_eq!(
        focus(&a, None).await,
        (json!("ONE\ntwo\nTHREE\n"), json!(3))
    );
}

/// The migration (PostgreSQL's 0038, SQLite's 0030), run on focus rows
/// stored the way the builds before stored them: a copy of the history row's
/// body goes; a text that differs from its history row's stays, unread; the
/// reads answer as before.
#[tokio::test]
async fn the_migration_moves_the_copies_written_before_it() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let s = start(&a, "a", None).await;
    ok(&a, "brain_session_end", end(id(&s), "a", "from a", 0)).await;
    let s = start(&a, "a", Some("ui")).await;
    ok(&a, "brain_session_end", end(id(&s), "a", "the ui", 0)).await;
    // As the builds before stored them: the base holds a copy of its history
    // row; the slot a text of its own (a row moved by hand, say).
    exec(
        &app,
        "UPDATE focus_bodies SET body = 'from a' WHERE slot = ''",
    )
    .await;
    exec(
        &app,
        "UPDATE focus_bodies SET body = 'by hand' WHERE slot = 'ui'",
    )
    .await;
    assert_eq!(named_only(&app, "", 1).await, 0);

    let migration = match &app.db {
        TestBackend::Postgres(_) => "postgres/0038_focus_body_once.sql",
        TestBackend::Sqlite(_) => "sqlite/0030_focus_body_once.sql",
    };
    run_migration(&app, migration).await;
    assert_eq!(named_only(&app, "", 1).await, 1);
    assert_eq!(
        count_rows(&app, "focus_bodies WHERE slot = 'ui' AND body = 'by hand'").await,
        1
    );
    assert_eq!(focus(&a, None).await, (json!("from a"), json!(1)));
    // The history row is the revision's body: the text by hand is not read.
    assert_eq!(focus(&a, Some("ui")).await, (json!("the ui"), json!(1)));
}

/// An export carries each focus row's body as text, so any build or store
/// that imports it reads it without the history.
#[tokio::test]
async fn an_export_carries_the_body() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let s = start(&a, "a", None).await;
    ok(&a, "brain_session_end", end(id(&s), "a", "exported", 0)).await;
    assert_eq!(named_only(&app, "", 1).await, 1);

    let file = std::env::temp_dir().join(format!("brain-focus-{}.jsonl", uuid::Uuid::new_v4()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["export", "--tenant", "acme", "-o", file.to_str().unwrap()])
        .env("DATABASE_URL", app.db.url())
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{out:?}");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["table"] == "focus_bodies" && v["row"]["project"] == "p")
        .map(|v| v["row"].clone())
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(
        (rows[0]["body"].clone(), rows[0]["revision"].clone()),
        (json!("exported"), json!(1))
    );
}

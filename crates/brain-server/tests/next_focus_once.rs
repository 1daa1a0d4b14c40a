//! Black-box: a session's `next_focus` is stored once (issue 40). A close
//! that writes exactly its next_focus as the target body keeps the text only
//! in that body's history row; the session names the row's revision, and
//! every read gives the text back. A close that does not write it (a
//! conflict) keeps the text in the session; a merge ends on the merged
//! text, which is the body it wrote. On both stores; the
//! rows are read from the database itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, TestApp, TestBackend, count_rows, exec, ok, spawn_app, token};
use serde_json::{Value, json};

async fn start(c: &Client, key: &str, slot: Option<&str>) -> String {
    let mut args = json!({"project": "p", "client_key": key});
    if let Some(slot) = slot {
        args["slot"] = json!(slot);
    }
    let s = ok(c, "brain_session_start", args).await;
    s["session"]["session_id"].as_str().unwrap().to_owned()
}

fn end(id: &str, key: &str, summary: &str, body: &str, rev: i64) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": summary,
           "next_focus": body, "expected_focus_revision": rev})
}

/// The sessions of summary `summary` stored as `how`: `once` (the text in
/// the history row `revision`), or `kept` (the text in the session).
async fn stored(app: &TestApp, summary: &str, how: &str, revision: i64) -> i64 {
    let filter = match how {
        "once" => format!("next_focus IS NULL AND next_focus_revision = {revision}"),
        _ => "next_focus IS NOT NULL AND next_focus_revision IS NULL".to_owned(),
    };
    count_rows(
        app,
        &format!("sessions WHERE summary = '{summary}' AND {filter}"),
    )
    .await
}

async fn next_focus(c: &Client, id: &str) -> Value {
    let got = ok(c, "brain_session_get", json!({"session_id": id})).await;
    got["session"]["next_focus"].clone()
}

#[tokio::test]
async fn an_applied_end_stores_its_next_focus_once() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let body = "goal: ship the importer\nowner: ana\n".repeat(20);

    let first = start(&a, "a", None).await;
    let out = ok(&a, "brain_session_end", end(&first, "a", "first", &body, 0)).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    assert_eq!(stored(&app, "first", "once", 1).await, 1);
    assert_eq!(stored(&app, "first", "kept", 0).await, 0);
    // The history row holds the one copy.
    assert_eq!(
        count_rows(&app, "focus_history WHERE slot = '' AND revision = 1").await,
        1
    );
    assert_eq!(next_focus(&a, &first).await, body.as_str());
    // A replay answers what the end answered.
    let again = ok(&a, "brain_session_end", end(&first, "a", "first", &body, 0)).await;
    assert_eq!(again["replayed"], true);
    assert_eq!(again["focus_at_end"], out["focus_at_end"]);

    // A session bound to a slot: its text is in the slot's history row.
    let bound = start(&a, "a", Some("ui")).await;
    ok(
        &a,
        "brain_session_end",
        end(&bound, "a", "bound", "the ui slot", 0),
    )
    .await;
    assert_eq!(stored(&app, "bound", "once", 1).await, 1);
    assert_eq!(next_focus(&a, &bound).await, "the ui slot");

    // A relay (of a bound session): the relayed session's text too.
    let relaying = start(&a, "a", Some("ui")).await;
    let mut args = end(&relaying, "a", "relayed", "handed over", 1);
    args["to_client_key"] = json!("b");
    let out = ok(&a, "brain_session_relay", args).await;
    assert_eq!(out["session"]["status"], "relayed", "{out}");
    assert_eq!(stored(&app, "relayed", "once", 2).await, 1);
    assert_eq!(next_focus(&a, &relaying).await, "handed over");

    // The session list counts the text it no longer stores.
    let list = ok(&a, "brain_session_list", json!({"project": "p"})).await;
    let item = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"]["session_id"] == first.as_str())
        .cloned()
        .unwrap();
    assert_eq!(item["next_focus_chars"], body.chars().count());
}

#[tokio::test]
async fn a_close_that_writes_no_body_keeps_its_text() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let sa = start(&a, "a", None).await;
    let sb = start(&b, "b", None).await;
    ok(&a, "brain_session_end", end(&sa, "a", "won", "from a", 0)).await;
    // b read revision 0, which a has moved: a conflict writes no body.
    let out = ok(&b, "brain_session_end", end(&sb, "b", "lost", "from b", 0)).await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    assert_eq!(stored(&app, "won", "once", 1).await, 1);
    assert_eq!(stored(&app, "lost", "kept", 0).await, 1);
    assert_eq!(next_focus(&b, &sb).await, "from b");
}

#[tokio::test]
async fn a_merged_end_stores_the_merged_text_once() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let first = start(&a, "a", None).await;
    ok(
        &a,
        "brain_session_end",
        end(&first, "a", "base", "one\ntwo\nthree\n", 0),
    )
    .await;
    let sa = start(&a, "a", None).await;
    let sb = start(&b, "b", None).await;
    ok(
        &a,
        "brain_session_end",
        end(&sa, "a", "moved", "ONE\ntwo\nthree\n", 1),
    )
    .await;
    let mut args = end(&sb, "b", "merged", "one\ntwo\nTHREE\n", 1);
    args["merge"] = json!(true);
    let out = ok(&b, "brain_session_end", args).await;
    assert_eq!(out["focus_outcome"], "merged", "{out}");
    assert_eq!(out["focus_at_end"]["body"], "ONE\ntwo\nTHREE\n");
    // A merge ends on the merged text, which is the body it wrote.
    assert_eq!(stored(&app, "merged", "once", 3).await, 1);
    assert_eq!(next_focus(&b, &sb).await, "ONE\ntwo\nTHREE\n");
}

/// The migration's move of the sessions closed before it (PostgreSQL's
/// 0034, SQLite's 0029), run on sessions stored the way the build before
/// stored them: the copy of an applied end's body goes, and the tenant's
/// usage with it; the copy a conflict keeps stays, and the reads answer as
/// before.
#[tokio::test]
async fn the_migration_moves_the_copies_closed_before_it() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let sa = start(&a, "a", None).await;
    let sb = start(&b, "b", None).await;
    ok(&a, "brain_session_end", end(&sa, "a", "won", "from a", 0)).await;
    ok(&b, "brain_session_end", end(&sb, "b", "lost", "from b", 0)).await;
    // As the build before stored them: the text in every session.
    exec(
        &app,
        "UPDATE sessions SET next_focus = 'from a', next_focus_revision = NULL \
         WHERE summary = 'won'",
    )
    .await;
    assert_eq!(stored(&app, "won", "kept", 0).await, 1);

    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations");
    let usage = "SELECT bytes FROM tenant_usage WHERE tenant_id = 'acme'";
    let (before, after) = match &app.db {
        TestBackend::Postgres(db) => {
            let moving =
                std::fs::read_to_string(format!("{root}/postgres/0034_next_focus_once.sql"))
                    .unwrap();
            let pool = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
            let before: i64 = sqlx::query_scalar(usage).fetch_one(&pool).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            sqlx::raw_sql(&moving).execute(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            let after: i64 = sqlx::query_scalar(usage).fetch_one(&pool).await.unwrap();
            pool.close().await;
            (before, after)
        }
        TestBackend::Sqlite(f) => {
            let text =
                std::fs::read_to_string(format!("{root}/sqlite/0029_next_focus_once.sql")).unwrap();
            let (_, moving) = text
                .split_once("ADD COLUMN next_focus_revision INTEGER;")
                .unwrap();
            let pool = sqlx::SqlitePool::connect(&f.url).await.unwrap();
            let before: i64 = sqlx::query_scalar(usage).fetch_one(&pool).await.unwrap();
            sqlx::raw_sql(moving).execute(&pool).await.unwrap();
            let after: i64 = sqlx::query_scalar(usage).fetch_one(&pool).await.unwrap();
            pool.close().await;
            (before, after)
        }
    };
    assert_eq!(after, before - 6, "the usage counts the copy it frees");
    assert_eq!(stored(&app, "won", "once", 1).await, 1);
    assert_eq!(stored(&app, "lost", "kept", 0).await, 1);
    assert_eq!(next_focus(&a, &sa).await, "from a");
    assert_eq!(next_focus(&b, &sb).await, "from b");
}

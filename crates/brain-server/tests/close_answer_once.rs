//! Black-box: a close's stored answer holds no copy of the session it closed
//! (issue 40). `sessions.close_result` keeps what a replay needs and the row
//! does not hold (the outcome, the revisions, the counts as of the close, a
//! relay's receiver); the closed session, summary included, is its row, and a
//! replay puts it back from there, answering exactly what the call answered.
//! On both stores; the rows are read from the database itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{
    Client, TestApp, TestBackend, count_rows, exec, ok, run_migration, spawn_app, token,
};
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

/// A SQL condition: the stored answer of the row holds a `session`.
fn holds_session(app: &TestApp) -> &'static str {
    match &app.db {
        TestBackend::Postgres(_) => "jsonb_exists(close_result, 'session')",
        TestBackend::Sqlite(_) => "json_type(close_result, '$.session') IS NOT NULL",
    }
}

/// The closed sessions whose stored answer holds a copy of the session.
async fn with_copy(app: &TestApp) -> i64 {
    let cond = holds_session(app);
    count_rows(
        app,
        &format!("sessions WHERE close_result IS NOT NULL AND {cond}"),
    )
    .await
}

/// The sessions with summary `summary` whose stored answer holds its text.
async fn summary_in_answer(app: &TestApp, summary: &str) -> i64 {
    let found = match &app.db {
        TestBackend::Postgres(_) => "strpos(close_result::text, summary) > 0",
        TestBackend::Sqlite(_) => "instr(close_result, summary) > 0",
    };
    count_rows(
        app,
        &format!("sessions WHERE summary = '{summary}' AND {found}"),
    )
    .await
}

fn as_replayed(mut answer: Value) -> Value {
    answer["replayed"] = json!(true);
    answer
}

#[tokio::test]
async fn a_close_stores_its_answer_without_the_session() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let sa = start(&a, "a", None).await;
    let sb = start(&b, "b", None).await;

    // An applied end.
    let args = end(&sa, "a", "won the race", "from a", 0);
    let out = ok(&a, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    assert_eq!(out["session"]["summary"], "won the race", "{out}");
    assert_eq!(
        count_rows(&app, "sessions WHERE close_result IS NOT NULL").await,
        1
    );
    assert_eq!(with_copy(&app).await, 0);
    assert_eq!(summary_in_answer(&app, "won the race").await, 0);
    // The replay answers exactly what the end answered.
    assert_eq!(ok(&a, "brain_session_end", args).await, as_replayed(out));

    // A conflict: its session carries the proposal, from the row.
    let args = end(&sb, "b", "lost the race", "from b", 0);
    let out = ok(&b, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    assert_eq!(out["session"]["next_focus"], "from b", "{out}");
    assert_eq!(with_copy(&app).await, 0);
    assert_eq!(ok(&b, "brain_session_end", args).await, as_replayed(out));

    // A relay: its session names the receiver.
    let bound = start(&a, "a", Some("ui")).await;
    let mut args = end(&bound, "a", "handed on", "the ui", 0);
    args["to_client_key"] = json!("b");
    let out = ok(&a, "brain_session_relay", args.clone()).await;
    assert_eq!(out["session"]["status"], "relayed", "{out}");
    assert_eq!(
        out["session"]["relayed_to"], out["new_session"]["session_id"],
        "{out}"
    );
    assert_eq!(with_copy(&app).await, 0);
    assert_eq!(ok(&a, "brain_session_relay", args).await, as_replayed(out));
}

/// The migration (PostgreSQL's 0040, SQLite's 0031), run on answers stored
/// the way the builds before stored them: the copy of the session goes from
/// an end's answer, an abandon's answer is kept whole, and a replay answers
/// as before.
#[tokio::test]
async fn the_migration_removes_the_copies_stored_before_it() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let s = start(&a, "a", None).await;
    let args = end(&s, "a", "ended before", "the plan", 0);
    let out = ok(&a, "brain_session_end", args.clone()).await;
    let gone = start(&a, "a", None).await;
    let abandon = json!({"session_id": gone, "expected_client_key": "a",
                         "reason": "started by mistake", "confirm": true});
    let abandoned = ok(&a, "brain_session_abandon", abandon.clone()).await;
    assert_eq!(abandoned["session"]["status"], "abandoned", "{abandoned}");

    // As the builds before stored it: the answer with its session.
    let session = out["session"].to_string().replace('\'', "''");
    let put_back = match &app.db {
        TestBackend::Postgres(_) => format!(
            "UPDATE sessions SET close_result = jsonb_set(close_result, '{{session}}', '{session}'::jsonb) WHERE summary = 'ended before'"
        ),
        TestBackend::Sqlite(_) => format!(
            "UPDATE sessions SET close_result = json_set(close_result, '$.session', json('{session}')) WHERE summary = 'ended before'"
        ),
    };
    exec(&app, &put_back).await;
    assert_eq!(with_copy(&app).await, 2, "the end's, and the abandon's");

    let migration = match &app.db {
        TestBackend::Postgres(_) => "postgres/0040_close_answer_once.sql",
        TestBackend::Sqlite(_) => "sqlite/0031_close_answer_once.sql",
    };
    run_migration(&app, migration).await;
    let cond = holds_session(&app);
    assert_eq!(
        count_rows(
            &app,
            &format!("sessions WHERE status = 'abandoned' AND {cond}")
        )
        .await,
        1,
        "an abandon's answer is kept whole"
    );
    assert_eq!(with_copy(&app).await, 1);
    assert_eq!(summary_in_answer(&app, "ended before").await, 0);
    assert_eq!(ok(&a, "brain_session_end", args).await, as_replayed(out));
    assert_eq!(
        ok(&a, "brain_session_abandon", abandon).await,
        as_replayed(abandoned)
    );
}

/// A close answers its own time as the session's last activity. The row may
/// hold a later one (PostgreSQL's one-call end keeps the time of a touch
/// that committed between its read and its write); the replay answers what
/// the close answered, not the row's later time.
#[tokio::test]
async fn a_replay_answers_the_close_time_as_the_last_activity() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let s = start(&a, "a", None).await;
    let args = end(&s, "a", "touched late", "the plan", 0);
    let out = ok(&a, "brain_session_end", args.clone()).await;
    assert_eq!(
        out["session"]["last_activity_at"], out["session"]["ended_at"],
        "{out}"
    );
    // The row as that race leaves it: a touch five seconds after the close's time.
    let later = match &app.db {
        TestBackend::Postgres(_) => "last_activity_at + interval '5 seconds'",
        TestBackend::Sqlite(_) => "last_activity_at + 5000000",
    };
    exec(
        &app,
        &format!("UPDATE sessions SET last_activity_at = {later} WHERE summary = 'touched late'"),
    )
    .await;
    assert_eq!(
        count_rows(
            &app,
            "sessions WHERE summary = 'touched late' AND last_activity_at > ended_at"
        )
        .await,
        1
    );
    assert_eq!(ok(&a, "brain_session_end", args).await, as_replayed(out));
}

/// The closes whose stored answer holds `text`.
async fn answers_holding(app: &TestApp, text: &str) -> i64 {
    let found = match &app.db {
        TestBackend::Postgres(_) => format!("strpos(close_result::text, '{text}') > 0"),
        TestBackend::Sqlite(_) => format!("instr(close_result, '{text}') > 0"),
    };
    count_rows(
        app,
        &format!("sessions WHERE close_result IS NOT NULL AND {found}"),
    )
    .await
}

/// An end that leaves the focus as it found it stores no copy of that body:
/// its session names the revision it kept (`next_focus_revision`, no text of
/// its own), and neither its stored answer nor a conflict's holds the body
/// it ended on; reads and replays put both back from the history row.
#[tokio::test]
async fn an_unchanged_or_conflicted_close_stores_no_copy_of_a_body() {
    let app = spawn_app().await;
    let a = app.client(&token("acme", "a")).await;
    let b = app.client(&token("acme", "b")).await;
    let body = format!("MARKED-BODY {}", "the plan carried forward; ".repeat(40));
    let s = start(&a, "a", None).await;
    let stale = start(&b, "b", None).await;
    ok(&a, "brain_session_end", end(&s, "a", "wrote it", &body, 0)).await;

    // Unchanged: the body named by revision, not stored again.
    let s = start(&a, "a", None).await;
    let args = end(&s, "a", "kept it", &body, 1);
    let out = ok(&a, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "unchanged", "{out}");
    assert_eq!(out["focus_at_end"]["body"], body.as_str(), "{out}");
    assert_eq!(
        count_rows(
            &app,
            "sessions WHERE summary = 'kept it' AND next_focus IS NULL AND next_focus_revision = 1"
        )
        .await,
        1
    );
    let read = ok(&a, "brain_session_get", json!({"session_id": s})).await;
    assert_eq!(read["session"]["next_focus"], body.as_str(), "{read}");
    assert_eq!(ok(&a, "brain_session_end", args).await, as_replayed(out));

    // A conflict: the proposal is the session's own text, the body it found
    // is not copied into its answer.
    let proposal = format!("from b {}", "b's own plan; ".repeat(100));
    let args = end(&stale, "b", "lost", &proposal, 0);
    let out = ok(&b, "brain_session_end", args.clone()).await;
    assert_eq!(out["focus_outcome"], "conflict", "{out}");
    assert_eq!(out["focus_at_end"]["body"], body.as_str(), "{out}");
    assert_eq!(ok(&b, "brain_session_end", args).await, as_replayed(out));

    assert_eq!(answers_holding(&app, "MARKED-BODY").await, 0);
}

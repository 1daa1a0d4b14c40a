//! Black-box, PostgreSQL: the statements one start+end pair sends to the
//! database, read off the wire (`brain_testkit::pg_proxy`), in a project the
//! server has written to before, as the benchmark's pairs are. The list is
//! what `bench/brain-pair.sql` models and what a change to the write path
//! is measured by: a new statement on the pair's path fails this test
//! until the list (and the benchmark's model) says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_testkit::app::{Client, ok, token};
use brain_testkit::pg_proxy::{ProxiedServer, Statement};
use serde_json::json;

/// What a statement is, and how to tell it by its shape.
type Expect = (&'static str, fn(&str) -> bool);

/// A tenant no background task names.
const TENANT: &str = "pairstatements";

async fn pair(c: &Client, n: usize) {
    let s = ok(
        c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let end = ok(
        c,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "k",
               "summary": "s", "next_focus": format!("body {n}"),
               "expected_focus_revision": n}),
    )
    .await;
    assert_eq!(end["focus_outcome"], "applied", "{end}");
}

/// A statement's text with its literals and parameters as `?` and its
/// whitespace collapsed.
fn shape(s: &Statement) -> String {
    let mut out = String::new();
    let mut chars = s.text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                }
                out.push('?');
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('?');
            }
            c if c.is_whitespace() => {
                if !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// Whether the statement names the tenant, in its text or its parameters.
fn names_tenant(s: &Statement) -> bool {
    s.text.contains(TENANT) || s.bind.windows(TENANT.len()).any(|w| w == TENANT.as_bytes())
}

/// The pair's statements among all those sent: each that names the tenant,
/// and each after one on the same connection until its COMMIT (the receipt
/// placed with it names nobody). The front door's connection bookkeeping
/// (looked up again once a second, and written in a tenant's transaction
/// of its own now and then) is left out, its whole transaction with it: it
/// is not the pair's.
fn the_pairs(sent: &[Statement]) -> Vec<&Statement> {
    let bookkeeping = |s: &Statement| s.text.contains("mcp_connections");
    // Each kept statement, in the order sent, with the transaction it is in.
    let mut kept: Vec<(&Statement, Option<usize>)> = Vec::new();
    let mut open = std::collections::HashMap::new();
    let mut dropped = std::collections::HashSet::new();
    for (i, s) in sent.iter().enumerate() {
        let tx = match open.get(&s.conn) {
            Some(&tx) => Some(tx),
            None if !names_tenant(s) => continue,
            None if s.text.starts_with("BEGIN") && !s.text.contains("COMMIT") => {
                open.insert(s.conn, i);
                Some(i)
            }
            None => None,
        };
        if bookkeeping(s) {
            match tx {
                Some(tx) => {
                    dropped.insert(tx);
                }
                None => continue,
            }
        }
        kept.push((s, tx));
        if tx.is_some() && (s.text.contains("COMMIT") || s.text.contains("ROLLBACK")) {
            open.remove(&s.conn);
        }
    }
    kept.into_iter()
        .filter(|(_, tx)| tx.is_none_or(|tx| !dropped.contains(&tx)))
        .map(|(s, _)| s)
        .collect()
}

/// An applied end's announcement to resource subscribers, sent after its
/// commit on a connection of its own (`brain_announce`).
const ANNOUNCE: &str = "SELECT brain_announce(?)";

/// What the server sent until and with the announcement of the last applied
/// end, which goes after that end's answer.
async fn sent_through_announcement(s: &ProxiedServer) -> Vec<Statement> {
    let mut sent = Vec::new();
    for _ in 0..200 {
        sent.extend(s.proxy.take_sent());
        if sent.iter().any(|x| shape(x) == ANNOUNCE) {
            return sent;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("no announcement of the end was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_sends_these_statements() {
    let s = ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await;
    let c = s.srv.client(&token(TENANT, "a")).await;
    // The project and the tenant exist, and the server knows them.
    pair(&c, 0).await;
    sent_through_announcement(&s).await;
    pair(&c, 1).await;
    let all = sent_through_announcement(&s).await;
    let sent: Vec<String> = the_pairs(&all).into_iter().map(shape).collect();
    for (i, x) in sent.iter().enumerate() {
        eprintln!("{i}: {x}");
    }
    let expected: [Expect; 4] = [
        ("the start: one call", |x| {
            x.starts_with("SELECT part, ord, k, name, txt, n, t1, t2, id FROM brain_start(")
        }),
        ("the end's read: session, body and counts, unlocked", |x| {
            x == "SELECT * FROM brain_peek_close(?, ?, ?)"
        }),
        ("the end: one call, with its receipt", |x| {
            x.starts_with("SELECT seq, prev_hash, hash FROM brain_end(")
        }),
        (
            "after its commit, the end's body announced to subscribers",
            |x| x == ANNOUNCE,
        ),
    ];
    assert_eq!(
        sent.len(),
        expected.len(),
        "a pair sent {} statements: {sent:#?}",
        sent.len()
    );
    for ((what, matches), x) in expected.iter().zip(&sent) {
        assert!(matches(x), "expected {what}, got {x}");
    }
    // The benchmark's model of a pair is these statements, as sent.
    assert_eq!(
        modelled(),
        sent,
        "bench/brain-pair.sql does not send what brain sends"
    );
}

/// `bench/brain-pair.sql`'s statements after its "What brain sends" line,
/// each as [`shape`] tells it once its pgbench variables (`:name`) and
/// `NULL`s, where brain binds parameters, are `?` too, and a `\gset` after
/// it is dropped.
fn modelled() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/brain-pair.sql");
    let script = std::fs::read_to_string(path).unwrap();
    let (_, sends) = script.split_once("-- What brain sends\n").unwrap();
    let mut out = Vec::new();
    let mut statement = String::new();
    for line in sends.lines() {
        // A pgbench meta-command (`\set`) sends nothing.
        if line.starts_with('\\') {
            continue;
        }
        // pgbench ends a command at its `;` or at a `\gset`.
        let (text, gset) = match line.split_once(" \\gset") {
            Some((text, _)) => (text, true),
            None => (line, false),
        };
        statement.push_str(text);
        statement.push(' ');
        if !gset && !text.trim_end().ends_with(';') {
            continue;
        }
        let text = std::mem::take(&mut statement);
        let text = text.trim().trim_end_matches(';');
        // pgbench's variables and brain's parameters read alike.
        let mut t = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == ':' && chars.peek().is_some_and(char::is_ascii_alphabetic) {
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_alphanumeric() || *d == '_')
                {
                    chars.next();
                }
                t.push_str("$0");
            } else {
                t.push(c);
            }
        }
        let text = t.replace("NULL", "$0");
        out.push(shape(&Statement {
            conn: 0,
            text,
            bind: Vec::new(),
        }));
    }
    out
}

/// A relay joins the tenant's group commit as an end does: its read, then
/// one call that closes the session, opens the receiver's and places the
/// receipt. The receiver's session starts on the base focus as it stood,
/// and its own end then writes its slot from where the relay left it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_sends_its_read_and_one_call() {
    let s = ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await;
    let c = s.srv.client(&token(TENANT, "a")).await;
    pair(&c, 0).await;
    pair(&c, 1).await;
    let a = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "a", "slot": "ui"}),
    )
    .await;
    sent_through_announcement(&s).await;
    let out = ok(
        &c,
        "brain_session_relay",
        json!({"session_id": a["session"]["session_id"], "expected_client_key": "a",
               "summary": "s", "next_focus": "the ui, half done",
               "expected_focus_revision": 0, "to_client_key": "b"}),
    )
    .await;
    let all = sent_through_announcement(&s).await;
    let sent: Vec<String> = the_pairs(&all).into_iter().map(shape).collect();
    assert_eq!(sent.len(), 3, "a relay sent {sent:#?}");
    assert_eq!(sent[0], "SELECT * FROM brain_peek_close(?, ?, ?)");
    assert!(
        sent[1].starts_with("SELECT seq, prev_hash, hash FROM brain_relay("),
        "{sent:#?}"
    );
    assert_eq!(
        sent[2], ANNOUNCE,
        "the slot's body announced after the commit"
    );
    assert_eq!(out["session"]["status"], "relayed", "{out}");
    assert_eq!(out["remaining_open_session_count"], 1, "{out}");
    assert_eq!(
        out["slot"],
        json!({"name": "ui", "body": "the ui, half done", "revision": 1})
    );
    let next = &out["new_session"];
    assert_eq!(next["client_key"], "b", "{out}");
    assert_eq!(
        next["started_focus_revision"], 2,
        "the base focus's revision"
    );
    assert_eq!(next["read_revision"], 1, "the slot as the relay left it");
    assert_eq!(next["relayed_from"], a["session"]["session_id"]);
    assert_eq!(out["session"]["relayed_to"], next["session_id"]);

    // What was written reads back as answered.
    let got = ok(
        &c,
        "brain_session_get",
        json!({"session_id": next["session_id"]}),
    )
    .await;
    assert_eq!(got["session"]["status"], "open", "{got}");
    assert_eq!(got["session"]["bound_slot"], "ui", "{got}");
    assert_eq!(got["session"]["started_focus_revision"], 2, "{got}");
    assert_eq!(got["session"]["relayed_from"], a["session"]["session_id"]);
    let ended = ok(
        &c,
        "brain_session_end",
        json!({"session_id": next["session_id"], "expected_client_key": "b",
               "summary": "s", "next_focus": "the ui, done",
               "expected_focus_revision": 1}),
    )
    .await;
    assert_eq!(ended["focus_outcome"], "applied", "{ended}");
    assert_eq!(ended["focus_revision_at_end"], 2, "{ended}");
    let again = ok(
        &c,
        "brain_session_get",
        json!({"session_id": a["session"]["session_id"]}),
    )
    .await;
    assert_eq!(
        again["session"]["relayed_to"], next["session_id"],
        "{again}"
    );
}

/// A close whose rows another transaction holds falls back to the locked
/// way; for a while its project's next closes, of sessions this replica
/// opened, go that way at once, without the read they would write nothing
/// after (`brain_closes_total{way="locked_contended"}`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_close_falls_back_its_project_locks_first() {
    use sqlx::Connection;
    let s = ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await;
    let c = s.srv.client(&token(TENANT, "a")).await;
    pair(&c, 0).await;
    let start = |k: &'static str| {
        let c = &c;
        async move {
            ok(
                c,
                "brain_session_start",
                json!({"project": "p", "client_key": k}),
            )
            .await
        }
    };
    let (a, b) = (start("ka").await, start("kb").await);
    let mut holder = sqlx::PgConnection::connect(&s.inspect).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT 1 FROM sessions WHERE client_key = 'ka' AND status = 'open' FOR UPDATE")
        .execute(&mut holder)
        .await
        .unwrap();
    s.proxy.take_sent();
    let end = |sess: &serde_json::Value, k: &str, rev: i64| {
        json!({"session_id": sess["session"]["session_id"], "expected_client_key": k,
               "summary": "s", "next_focus": format!("body by {k}"),
               "expected_focus_revision": rev})
    };
    let ending_a = {
        let args = end(&a, "ka", 1);
        let c = s.srv.client(&token(TENANT, "a")).await;
        // The fall-back is remembered for a second from when it happened,
        // which is after this.
        let tried = std::time::Instant::now();
        let task = tokio::spawn(async move { ok(&c, "brain_session_end", args).await });
        (task, tried)
    };
    let (ending_a, tried) = ending_a;
    // The held row sent the end the locked way, where it waits.
    let mut sent = Vec::new();
    for _ in 0..200 {
        sent.extend(s.proxy.take_sent());
        if sent.iter().any(|x| x.text.contains("brain_lock_close")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let shapes: Vec<String> = the_pairs(&sent).into_iter().map(shape).collect();
    assert!(
        shapes.iter().any(|x| x.contains("brain_end(")),
        "the end tried one call first: {shapes:#?}"
    );
    assert!(
        shapes.iter().any(|x| x.contains("brain_lock_close")),
        "then the locked way: {shapes:#?}"
    );
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let out = ending_a.await.unwrap();
    assert_eq!(out["focus_outcome"], "applied", "{out}");

    s.proxy.take_sent();
    let within_window = tried.elapsed() < std::time::Duration::from_millis(900);
    eprintln!("the second end {:?} after the first", tried.elapsed());
    let out = ok(&c, "brain_session_end", end(&b, "kb", 2)).await;
    assert_eq!(out["focus_outcome"], "applied", "{out}");
    let shapes: Vec<String> = the_pairs(&s.proxy.take_sent())
        .into_iter()
        .map(shape)
        .collect();
    if !within_window {
        // A machine slow enough to take the whole window between the two
        // ends tells nothing about the window.
        eprintln!("the second end came after the window: not asserted");
        return;
    }
    assert!(
        !shapes.iter().any(|x| x.contains("brain_peek_close")),
        "the project's next close did not read first: {shapes:#?}"
    );
    assert!(
        shapes.iter().any(|x| x.contains("brain_lock_close")),
        "it went the locked way: {shapes:#?}"
    );
    // The server counts both ways (the relay and pairs before went in one call).
    let metrics = reqwest::get(format!("{}/metrics", s.srv.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let way = |w: &str| {
        let prefix = format!("brain_closes_total{{way=\"{w}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert_eq!(way("locked_after_read"), 1.0, "{metrics}");
    assert_eq!(way("locked_contended"), 1.0, "{metrics}");
    assert_eq!(way("one_call"), 1.0, "the first pair's end: {metrics}");
}

/// `brain_peek_close` as it is declared, refusing every call.
const REFUSED_PEEK: &str = "CREATE OR REPLACE FUNCTION brain_peek_close(
    p_tenant text, p_session uuid, p_until timestamptz)
RETURNS TABLE (session_id uuid, project text, client_key text, kind text, bound_slot text,
    started_focus_revision bigint, read_revision bigint, relayed_from uuid, status text,
    opened_at timestamptz,
    last_activity_at timestamptz, ended_at timestamptz, summary text, next_focus text,
    nothing_to_capture_reason text, focus_outcome text, abandon_reason text,
    opened_by_kind text, opened_by_subject text, opened_by_role text,
    opened_by_credential text, close_digest text, close_result jsonb,
    body text, revision bigint, updated_at timestamptz, updated_by_session uuid,
    open_agents bigint, unattributed_n bigint, unattributed_ids uuid[], base_revision bigint)
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$";

/// A close's read without locks is one it could do without: when it fails
/// (here the database refuses it), the close goes the locked way and is
/// answered as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_read_sends_the_close_the_locked_way() {
    use sqlx::Connection;
    let s = ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await;
    let c = s.srv.client(&token(TENANT, "a")).await;
    pair(&c, 0).await;
    sent_through_announcement(&s).await;
    let mut admin = sqlx::PgConnection::connect(&s.inspect).await.unwrap();
    // The read fails when it runs, not when it is prepared: a Parse that
    // fails sends no Bind, and the proxy notes statements at their Bind.
    sqlx::query(REFUSED_PEEK).execute(&mut admin).await.unwrap();
    s.proxy.take_sent();
    pair(&c, 1).await;
    let shapes: Vec<String> = the_pairs(&s.proxy.take_sent())
        .into_iter()
        .map(shape)
        .collect();
    assert!(
        shapes.iter().any(|x| x.contains("brain_peek_close")),
        "the read was tried: {shapes:#?}"
    );
    assert!(
        shapes.iter().any(|x| x.contains("brain_lock_close")),
        "then the locked way: {shapes:#?}"
    );
}

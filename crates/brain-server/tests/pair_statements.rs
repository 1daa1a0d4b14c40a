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
/// (looked up again once a second) is left out: it is not the pair's.
fn the_pairs(sent: &[Statement]) -> Vec<&Statement> {
    let mut open = std::collections::HashSet::new();
    let mut out = Vec::new();
    for s in sent {
        if names_tenant(s) || open.contains(&s.conn) {
            if s.text.contains("mcp_connections") {
                continue;
            }
            out.push(s);
            if s.text.contains("COMMIT") {
                open.remove(&s.conn);
            } else if s.text.starts_with("BEGIN") {
                open.insert(s.conn);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_sends_these_statements() {
    let s = ProxiedServer::start(env!("CARGO_BIN_EXE_brain")).await;
    let c = s.srv.client(&token(TENANT, "a")).await;
    // The project and the tenant exist, and the server knows them.
    pair(&c, 0).await;
    s.proxy.take_sent();
    pair(&c, 1).await;
    let all = s.proxy.take_sent();
    let sent: Vec<String> = the_pairs(&all).into_iter().map(shape).collect();
    for (i, x) in sent.iter().enumerate() {
        eprintln!("{i}: {x}");
    }
    let expected: [Expect; 5] = [
        ("the start: one call", |x| {
            x.starts_with("SELECT part, ord, k, name, txt, n, t1, t2, id FROM brain_start(")
        }),
        ("the end's BEGIN with its scope and brain_lock_close", |x| {
            x.starts_with("BEGIN") && x.contains("brain_lock_close(")
        }),
        ("the counts the end's answer reports", |x| {
            x.starts_with("SELECT (SELECT count(*) FROM sessions")
        }),
        (
            "the close: session, body, NOTIFY and the receipt's setting",
            |x| x.starts_with("WITH s AS (UPDATE sessions") && x.contains("set_config(?, ?, true)"),
        ),
        ("the receipt placed with the COMMIT", |x| {
            x == "SELECT seq, prev_hash, hash FROM brain_place_pending(); COMMIT"
        }),
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
}

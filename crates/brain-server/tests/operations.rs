//! Operations (SPEC §4, §6): Prometheus metrics, structured logs that never
//! carry secrets, and a graceful shutdown that loses nothing acknowledged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::time::Duration;

use brain_testkit::TestSqlite;
use brain_testkit::app::{SECRET, ok, raw_connect, raw_tool, spawn_app, token};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    brain_testkit::app::refused(&c, "brain_session_end", json!({"session_id": s["session"]["session_id"],
        "expected_client_key": "wrong", "summary": "s", "next_focus": "n", "expected_focus_revision": 0})).await;
    // A one-call write, which PostgreSQL commits through its tenant's group commit.
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "counted"}),
    )
    .await;
    let resp = reqwest::get(app.url("/metrics")).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = resp.text().await.unwrap();
    for needle in [
        "brain_http_requests_total{route=\"/mcp\",status=\"200\"}",
        "brain_tool_calls_total{tool=\"brain_session_start\",outcome=\"ok\"}",
        "brain_tool_calls_total{tool=\"brain_session_end\",outcome=\"client_key_mismatch\"}",
        "brain_tool_call_duration_seconds_bucket{tool=\"brain_session_start\",le=\"0.005\"}",
        "brain_receipts_written_total",
        "brain_open_sessions",
        "brain_open_mcp_connections",
        "brain_db_pool_connections",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
    if matches!(app.db, brain_testkit::app::TestBackend::Postgres(_)) {
        let value = |name: &str| -> f64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
                .unwrap_or_else(|| panic!("missing {name} in:\n{text}"))
        };
        let commits = value("brain_group_commits_total");
        assert!(commits >= 1.0, "{text}");
        assert!(
            value("brain_group_commit_writes_total") >= commits,
            "{text}"
        );
    }
    c.cancel().await.unwrap();
}

struct Server {
    child: tokio::process::Child,
    base: String,
    log: tokio::sync::mpsc::UnboundedReceiver<String>,
}

/// `brain serve` on a SQLite file, with JSON logs collected line by line.
async fn server(file: &TestSqlite, extra: &[(&str, &str)]) -> Server {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"));
    cmd.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &file.url,
    ])
    .env("BRAIN_JWT_HS256_SECRET", SECRET)
    .env("BRAIN_LOG_FORMAT", "json")
    .env_remove("RUST_LOG")
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, mut log) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(l)) = lines.next_line().await {
            let _ = tx.send(l);
        }
    });
    let addr = loop {
        let line = log.recv().await.expect("server exited before listening");
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(a) = v["addr"].as_str() {
            break a.to_owned();
        }
    };
    Server {
        child,
        base: format!("http://{addr}"),
        log,
    }
}

fn sigterm(child: &tokio::process::Child) {
    let pid = child.id().unwrap().to_string();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn json_logs_carry_context_and_never_secrets() {
    let file = TestSqlite::new();
    let mut srv = server(&file, &[]).await;
    let alice = token("acme", "alice");
    let conn = raw_connect(&srv.base, &alice).await;
    let (s, _) = raw_tool(
        &srv.base,
        &alice,
        &conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let (_, err) = raw_tool(&srv.base, &alice, &conn, "brain_session_end", json!({"session_id": s["session"]["session_id"],
        "expected_client_key": "nope", "summary": "secret summary text", "next_focus": "n", "expected_focus_revision": 0})).await;
    assert!(err);
    let resp = reqwest::Client::new()
        .post(format!("{}/mcp", srv.base))
        .bearer_auth("bad.token.here")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    sigterm(&srv.child);
    let status = tokio::time::timeout(Duration::from_secs(30), srv.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let mut lines = Vec::new();
    while let Ok(l) = srv.log.try_recv() {
        lines.push(l);
    }
    let all = lines.join("\n");
    assert!(!all.contains(&alice), "the token leaked into the log");
    assert!(
        !all.contains(&conn),
        "the connection id leaked into the log"
    );
    assert!(
        !all.contains("secret summary text"),
        "a request body leaked into the log"
    );
    let mut tool_lines = 0;
    for l in &lines {
        let v: Value =
            serde_json::from_str(l).unwrap_or_else(|_| panic!("not one JSON object per line: {l}"));
        if v["tool"].is_string() {
            tool_lines += 1;
            for field in ["tenant", "outcome", "latency_ms"] {
                assert!(!v[field].is_null(), "{field} missing in {l}");
            }
            assert!(l.contains("request_id"), "no request id in {l}");
        }
    }
    assert_eq!(tool_lines, 2, "{all}");
    assert!(all.contains("\"outcome\":\"client_key_mismatch\""));
}

#[tokio::test]
async fn sigterm_finishes_in_flight_calls_and_exits_zero() {
    let file = TestSqlite::new();
    let mut srv = server(&file, &[("BRAIN_SHUTDOWN_GRACE_SECS", "5")]).await;
    let alice = token("acme", "alice");
    let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut tasks = Vec::new();
    for w in 0..6 {
        let (base, alice, acked) = (srv.base.clone(), alice.clone(), acked.clone());
        tasks.push(tokio::spawn(async move {
            let Ok(conn) = tokio::spawn({
                let (base, alice) = (base.clone(), alice.clone());
                async move { raw_connect(&base, &alice).await }
            })
            .await
            else {
                return;
            };
            for i in 0..10_000 {
                let args = json!({"project": "p", "kind": "note", "text": format!("w{w} #{i}")});
                let call = tokio::spawn({
                    let (base, alice, conn) = (base.clone(), alice.clone(), conn.clone());
                    async move { raw_tool(&base, &alice, &conn, "brain_remember", args).await }
                });
                match call.await {
                    Ok((out, false)) => acked
                        .lock()
                        .unwrap()
                        .push(out["artifact"]["artifact_id"].as_str().unwrap().to_owned()),
                    _ => break, // refused or cut off: not acknowledged
                }
            }
        }));
    }
    // Let the burst run, then ask the server to stop in the middle of it.
    while acked.lock().unwrap().len() < 60 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    sigterm(&srv.child);
    let status = tokio::time::timeout(Duration::from_secs(30), srv.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit status {status}");
    for t in tasks {
        let _ = t.await;
    }
    let acked = acked.lock().unwrap().clone();
    let pool = sqlx::SqlitePool::connect(&file.url).await.unwrap();
    let stored: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT artifact_id FROM artifacts")
        .fetch_all(&pool)
        .await
        .unwrap();
    let stored: std::collections::HashSet<String> = stored
        .into_iter()
        .map(|u| brain_core::ids::ArtifactId::from_uuid(u).to_string())
        .collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged {id} was lost");
    }
    assert!(acked.len() >= 60);
    pool.close().await;
}

//! Two real `brain serve` processes on one PostgreSQL behave as one server
//! (SPEC §6): connections, elevations and compare-and-swap span replicas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Stdio;
use std::sync::Arc;

use brain_testkit::TestDb;
use brain_testkit::app::{SECRET, raw_connect, raw_rpc, raw_tool, token, token_with};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

struct Replica {
    base: String,
    child: tokio::process::Child,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn replica(db: &TestDb) -> Replica {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .env("DATABASE_URL", &db.url)
        .env("BRAIN_LOG_FORMAT", "text")
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("replica exited before listening");
        if let Some(rest) = line.split("addr=").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep draining the log so the replica never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Replica {
        base: format!("http://{addr}"),
        child,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_behave_as_one_server() {
    let db = TestDb::create().await.unwrap();
    let a = replica(&db).await;
    let b = replica(&db).await;
    let alice = token("acme", "alice");
    // A connection initialized on A keeps working when its requests go to B.
    let conn = raw_connect(&a.base, &alice).await;
    let (status, listed) = raw_rpc(&b.base, &alice, &conn, "tools/list", json!({})).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 17);
    let (s, err) = raw_tool(
        &b.base,
        &alice,
        &conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    assert!(!err, "{s}");
    let (s2, _) = raw_tool(
        &a.base,
        &alice,
        &conn,
        "brain_session_get",
        json!({"session_id": s["session"]["session_id"]}),
    )
    .await;
    assert_eq!(s2["session"]["status"], json!("open"));
    // …and stays bound to its credential on both.
    let (status, _) = raw_rpc(
        &b.base,
        &token("acme", "bob"),
        &conn,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(status, 404);

    // An elevation granted through A is honoured on B.
    let op = token_with(json!({"tenant": "acme", "sub": "op", "role": "operator"}));
    let op_conn = raw_connect(&a.base, &op).await;
    let (w, _) = raw_tool(
        &a.base,
        &op,
        &op_conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    raw_tool(&a.base, &op, &op_conn, "brain_session_end", json!({"session_id": w["session"]["session_id"],
        "expected_client_key": "w", "summary": "s", "next_focus": "0123456789", "expected_focus_revision": 0})).await;
    let grant = reqwest::Client::new()
        .post(format!("{}/brain-admin/elevations", a.base))
        .bearer_auth(&op)
        .json(&json!({"mcp_session_id": op_conn, "reason": "trim", "ttl_secs": 300}))
        .send()
        .await
        .unwrap();
    assert_eq!(grant.status().as_u16(), 201);
    let (t, _) = raw_tool(
        &b.base,
        &op,
        &op_conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "t"}),
    )
    .await;
    let (out, err) = raw_tool(&b.base, &op, &op_conn, "brain_session_end", json!({"session_id": t["session"]["session_id"],
        "expected_client_key": "t", "summary": "s", "next_focus": "01", "expected_focus_revision": 1,
        "allow_focus_shrink": true})).await;
    assert!(!err, "{out}");
    assert_eq!(out["focus_outcome"], json!("applied"));

    // A compare-and-swap race spread over both replicas: exactly one applied.
    const N: usize = 20;
    let mut sessions = Vec::new();
    for i in 0..N {
        let base = if i % 2 == 0 { &a.base } else { &b.base };
        let (s, _) = raw_tool(
            base,
            &alice,
            &conn,
            "brain_session_start",
            json!({"project": "race", "client_key": format!("k{i}")}),
        )
        .await;
        sessions.push(s["session"]["session_id"].as_str().unwrap().to_owned());
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for (i, sid) in sessions.into_iter().enumerate() {
        let base = if i % 2 == 0 {
            a.base.clone()
        } else {
            b.base.clone()
        };
        let (alice, conn, barrier) = (alice.clone(), conn.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let (out, err) = raw_tool(&base, &alice, &conn, "brain_session_end", json!({"session_id": sid,
                "expected_client_key": format!("k{i}"), "summary": "raced", "next_focus": format!("from {i}"),
                "expected_focus_revision": 0})).await;
            assert!(!err, "{out}");
            out["focus_outcome"].as_str().unwrap().to_owned()
        }));
    }
    let mut outcomes: Vec<String> = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let applied = outcomes.iter().filter(|o| *o == "applied").count();
    assert_eq!(
        (applied, outcomes.len() - applied),
        (1, N - 1),
        "{outcomes:?}"
    );
    let store = brain_server::serve::open_store(&db.url, Default::default())
        .await
        .unwrap();
    let receipts = store
        .receipts(&brain_core::ids::TenantId::parse("acme").unwrap())
        .await
        .unwrap();
    assert_eq!(
        brain_core::receipt::verify_chain(&receipts),
        Ok(receipts.len())
    );
}

/// SPEC §2.11 across replicas: a subscriber on A hears, within a second, an
/// end that B applied; another tenant subscribed to its own project "p" on A
/// hears nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[allow(deprecated)]
async fn focus_changes_reach_subscribers_on_other_replicas() {
    use rmcp::model::{ReadResourceRequestParams, ResourceContents, SubscribeRequestParams};
    use std::time::Duration;

    let db = TestDb::create().await.unwrap();
    let a = replica(&db).await;
    let b = replica(&db).await;
    let alice = token("acme", "alice");
    let bob = token("acme", "bob");
    let eve = token("other", "eve");

    // Both tenants have a project "p" (created by starts on B).
    let bob_conn = raw_connect(&b.base, &bob).await;
    let (s, err) = raw_tool(
        &b.base,
        &bob,
        &bob_conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    assert!(!err, "{s}");
    let eve_conn = raw_connect(&b.base, &eve).await;
    let (_, err) = raw_tool(
        &b.base,
        &eve,
        &eve_conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "e"}),
    )
    .await;
    assert!(!err);

    let uri = "brain://projects/p/focus";
    let (watcher, mut rx) =
        brain_testkit::app::watching_client(&format!("{}/mcp", a.base), &alice).await;
    let (eve_watcher, mut eve_rx) =
        brain_testkit::app::watching_client(&format!("{}/mcp", a.base), &eve).await;
    watcher
        .subscribe(SubscribeRequestParams::new(uri))
        .await
        .unwrap();
    eve_watcher
        .subscribe(SubscribeRequestParams::new(uri))
        .await
        .unwrap();

    let (end, err) = raw_tool(
        &b.base,
        &bob,
        &bob_conn,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "k",
               "summary": "s", "next_focus": "written on replica B", "expected_focus_revision": 0}),
    )
    .await;
    assert!(!err, "{end}");
    let got = tokio::time::timeout(Duration::from_secs(1), rx.recv())
        .await
        .expect("no notification within 1 s");
    assert_eq!(got.as_deref(), Some(uri));
    let read = watcher
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    match &read.contents[0] {
        ResourceContents::TextResourceContents { text, meta, .. } => {
            assert_eq!(text, "written on replica B");
            assert_eq!(meta.as_ref().unwrap().0["revision"], 1);
        }
        other => panic!("not text: {other:?}"),
    }
    // A change of eve's own, on another project, after acme's: replica A
    // hears the two in commit order and tells each subscriber in that order,
    // so a stray delivery of acme's change to eve would arrive before it.
    let marker = "brain://projects/q/focus";
    let (q, err) = raw_tool(
        &b.base,
        &eve,
        &eve_conn,
        "brain_session_start",
        json!({"project": "q", "client_key": "e"}),
    )
    .await;
    assert!(!err, "{q}");
    eve_watcher
        .subscribe(SubscribeRequestParams::new(marker))
        .await
        .unwrap();
    let (end, err) = raw_tool(
        &b.base,
        &eve,
        &eve_conn,
        "brain_session_end",
        json!({"session_id": q["session"]["session_id"], "expected_client_key": "e",
               "summary": "s", "next_focus": "eve's own", "expected_focus_revision": 0}),
    )
    .await;
    assert!(!err, "{end}");
    let first = tokio::time::timeout(Duration::from_secs(5), eve_rx.recv())
        .await
        .expect("eve heard nothing of her own change within 5 s");
    assert_eq!(first.as_deref(), Some(marker), "eve heard acme's change");
}

/// Replicas answer `brain_focus_get` from memory (docs/architecture.md, Focus reads from memory), yet a
/// read on A right after an end that B applied and answered shows that end's
/// body and revision, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_focus_read_on_one_replica_sees_an_end_answered_by_the_other() {
    let db = TestDb::create().await.unwrap();
    let a = replica(&db).await;
    let b = replica(&db).await;
    let alice = token("acme", "alice");
    let on_a = raw_connect(&a.base, &alice).await;
    let on_b = raw_connect(&b.base, &alice).await;
    let mut revision = 0;
    for i in 0..30 {
        // A reads (and remembers) before every change B makes.
        let (seen, err) = raw_tool(
            &a.base,
            &alice,
            &on_a,
            "brain_focus_get",
            json!({"project": "p"}),
        )
        .await;
        assert!(!err, "{seen}");
        assert_eq!(seen["revision"], json!(revision));
        let (s, err) = raw_tool(
            &b.base,
            &alice,
            &on_b,
            "brain_session_start",
            json!({"project": "p", "client_key": format!("k{i}")}),
        )
        .await;
        assert!(!err, "{s}");
        let body = format!("focus written on B, round {i:03}");
        let (end, err) = raw_tool(
            &b.base,
            &alice,
            &on_b,
            "brain_session_end",
            json!({
            "session_id": s["session"]["session_id"], "expected_client_key": format!("k{i}"),
            "summary": "s", "next_focus": body, "expected_focus_revision": revision}),
        )
        .await;
        assert!(!err, "{end}");
        assert_eq!(end["focus_outcome"], json!("applied"), "{end}");
        revision = end["focus_revision_at_end"].as_i64().unwrap();
        let (read, err) = raw_tool(
            &a.base,
            &alice,
            &on_a,
            "brain_focus_get",
            json!({"project": "p"}),
        )
        .await;
        assert!(!err, "{read}");
        assert_eq!(
            (
                read["body"].as_str().unwrap(),
                read["revision"].as_i64().unwrap()
            ),
            (body.as_str(), revision),
            "round {i}"
        );
    }
    // And A did answer from memory: each round's first read found what the
    // previous round's last read kept (B's start changes no focus row).
    let metrics = reqwest::get(format!("{}/metrics", a.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let hits: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("brain_focus_memory_hits_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no focus memory hits in /metrics:\n{metrics}"));
    assert!(hits >= 20, "only {hits} reads answered from memory");
}

/// Third hostile review, L1: an elevation outlived its connection. After a
/// DELETE on replica A it was still listed active, and replica B, which had
/// served the connection within its 1 s memory of open connections, still
/// honoured it for a shrink.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_elevation_ends_with_its_connection_on_every_replica() {
    let db = TestDb::create().await.unwrap();
    let a = replica(&db).await;
    let b = replica(&db).await;
    let op = token_with(json!({"tenant": "acme", "sub": "olga", "role": "operator"}));
    let conn = raw_connect(&a.base, &op).await;
    let http = reqwest::Client::new();
    let granted = http
        .post(format!("{}/brain-admin/elevations", a.base))
        .bearer_auth(&op)
        .json(&json!({"mcp_session_id": conn, "reason": "cleanup", "ttl_secs": 600}))
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status().as_u16(), 201, "{:?}", granted.text().await);
    // A body of 100 characters at revision 1, and a session to shrink it.
    let (s, _) = raw_tool(
        &b.base,
        &op,
        &conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let id = s["session"]["session_id"].clone();
    let (e, err) = raw_tool(&b.base, &op, &conn, "brain_session_end", json!({"session_id": id,
        "expected_client_key": "k", "summary": "s", "next_focus": "x".repeat(100), "expected_focus_revision": 0})).await;
    assert!(!err, "{e}");
    let (s, _) = raw_tool(
        &b.base,
        &op,
        &conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "k2"}),
    )
    .await;
    let id = s["session"]["session_id"].clone();
    // B has just served the connection. A closes it.
    let deleted = http
        .delete(format!("{}/mcp", a.base))
        .bearer_auth(&op)
        .header("mcp-session-id", &conn)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let listed: serde_json::Value = http
        .get(format!("{}/brain-admin/elevations", a.base))
        .bearer_auth(&op)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["elevations"], json!([]), "{listed}");
    let (status, msg) = raw_rpc(&b.base, &op, &conn, "tools/call", json!({"name": "brain_session_end",
        "arguments": {"session_id": id, "expected_client_key": "k2", "summary": "s", "next_focus": "y",
            "expected_focus_revision": 1, "allow_focus_shrink": true}})).await;
    // Either B no longer knows the connection (404) or the elevation is gone.
    if status == 200 {
        let r = &msg["result"];
        assert_eq!(r["isError"], true, "{msg}");
        assert_eq!(
            r["structuredContent"]["error"]["code"],
            "focus_shrink_override_refused"
        );
    } else {
        assert_eq!(status, 404, "{msg}");
    }
    let (f, _) = raw_tool(
        &a.base,
        &op,
        &raw_connect(&a.base, &op).await,
        "brain_focus_get",
        json!({"project": "p"}),
    )
    .await;
    assert_eq!(f["revision"], 1, "the shrink was applied: {f}");
}

//! Black-box: a hostile tenant member (SPEC §1 Elevation, §4 front door). Each
//! test is one finding of the attack review; they run on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use brain_server::http::limits::LimitSettings;
use brain_testkit::app::{
    ServerProcess, TestApp, TestBackend, TestOptions, count_rows, jwt_config, latest_connection,
    ok, raw_connect, raw_rpc, raw_tool, spawn_app, spawn_app_opts, token, token_with,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn operator(sub: &str) -> String {
    token_with(json!({"tenant": "acme", "sub": sub, "role": "operator"}))
}

fn agent(sub: &str) -> String {
    token_with(json!({"tenant": "acme", "sub": sub, "role": "agent"}))
}

async fn grant(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    let resp = reqwest::Client::new()
        .post(app.url("/brain-admin/elevations"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let st = resp.status();
    (st, resp.json().await.unwrap_or(Value::Null))
}

/// A `tools/call` on the sessionless protocol revision (no connection id).
async fn sessionless_tool(app: &TestApp, token: &str, tool: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": args, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}}}});
    let text = reqwest::Client::new()
        .post(app.mcp_url())
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let msg: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str(d.trim()).ok())
        .or_else(|| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {text}"));
    msg["result"]["structuredContent"].clone()
}

async fn focus_of(app: &TestApp) -> Value {
    let c = app.client(&token("acme", "reader")).await;
    let f = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    c.cancel().await.unwrap();
    f
}

/// A base focus of 100 characters, at revision 1.
async fn hundred_chars(app: &TestApp) {
    let c = app.client(&token("acme", "writer")).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    ok(
        &c,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"], "expected_client_key": "w",
        "summary": "s", "next_focus": "x".repeat(100), "expected_focus_revision": 0}),
    )
    .await;
    c.cancel().await.unwrap();
}

fn shrink_args(session: &Value, key: &str) -> Value {
    json!({"session_id": session, "expected_client_key": key, "summary": "s",
           "next_focus": "y", "expected_focus_revision": 1, "allow_focus_shrink": true})
}

/// Finding 1: an agent-role token never rides an operator's elevation — not on
/// its own connection, not on the operator's connection, not on an elevated
/// brain session.
#[tokio::test]
async fn authority_follows_the_token() {
    let app = spawn_app().await;
    hundred_chars(&app).await;
    let base = format!("http://{}", app.addr);
    let (op, ag) = (operator("alice"), agent("alice"));

    // (a) The operator cannot elevate the agent's connection (same iss+sub).
    let agent_conn = raw_connect(&base, &ag).await;
    let (st, body) = grant(
        &app,
        &op,
        json!({"mcp_session_id": agent_conn, "reason": "r"}),
    )
    .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    let (s, _) = raw_tool(
        &base,
        &ag,
        &agent_conn,
        "brain_session_start",
        json!({"project": "p", "client_key": "a"}),
    )
    .await;
    let (out, is_error) = raw_tool(
        &base,
        &ag,
        &agent_conn,
        "brain_session_end",
        shrink_args(&s["session"]["session_id"], "a"),
    )
    .await;
    assert!(is_error);
    assert_eq!(out["error"]["code"], json!("focus_shrink_override_refused"));

    // (b) The operator's own, elevated connection is 404 to the agent token.
    let op_conn = raw_connect(&base, &op).await;
    let (st, _) = grant(&app, &op, json!({"mcp_session_id": op_conn, "reason": "r"})).await;
    assert_eq!(st, StatusCode::CREATED);
    let resp = reqwest::Client::new()
        .post(app.mcp_url())
        .bearer_auth(&ag)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &op_conn)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    // A relay-role token of the same subject is refused the same way.
    let relay = token_with(json!({"tenant": "acme", "sub": "alice", "role": "relay"}));
    let resp = reqwest::Client::new()
        .delete(app.mcp_url())
        .bearer_auth(&relay)
        .header("mcp-session-id", &op_conn)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    // (c) Sessionless: an operator-opened session elevated by session id does
    // nothing for the agent token of the same subject.
    let started = sessionless_tool(
        &app,
        &op,
        "brain_session_start",
        json!({"project": "p", "client_key": "o"}),
    )
    .await;
    let sid = started["session"]["session_id"].clone();
    let (st, body) = grant(&app, &op, json!({"session_id": sid, "reason": "r"})).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    let refused = sessionless_tool(&app, &ag, "brain_session_end", shrink_args(&sid, "o")).await;
    assert_eq!(
        refused["error"]["code"],
        json!("focus_shrink_override_refused"),
        "{refused}"
    );
    // ... and an agent-opened session cannot be elevated at all.
    let mine = sessionless_tool(
        &app,
        &ag,
        "brain_session_start",
        json!({"project": "p", "client_key": "m"}),
    )
    .await;
    let (st, _) = grant(
        &app,
        &op,
        json!({"session_id": mine["session"]["session_id"], "reason": "r"}),
    )
    .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let f = focus_of(&app).await;
    assert_eq!(f["revision"], json!(1), "the focus never moved");
    assert_eq!(f["body"].as_str().unwrap().len(), 100);

    // The operator's own token on its elevated session does override.
    let applied = sessionless_tool(&app, &op, "brain_session_end", shrink_args(&sid, "o")).await;
    assert_eq!(applied["focus_outcome"], json!("applied"), "{applied}");

    // Connection ids are shown only to their owner.
    let c = app.client(&token("acme", "snoop")).await;
    let r = ok(&c, "brain_receipts", json!({"limit": 100})).await;
    let text = r.to_string();
    assert!(
        !text.contains(&op_conn) && !text.contains(&agent_conn),
        "{text}"
    );
    assert!(text.contains("fp_"), "fingerprints are shown instead");
    // Tracer sessions (where calls that name no session are filed) carry a
    // fingerprint too.
    let mut seen = 0;
    for rec in r["receipts"].as_array().unwrap() {
        if let Some(sid) = rec["session_id"].as_str() {
            let got =
                brain_testkit::app::call(&c, "brain_session_get", json!({"session_id": sid})).await;
            let got = serde_json::to_string(&got.structured_content).unwrap();
            assert!(
                !got.contains(&op_conn) && !got.contains(&agent_conn),
                "{got}"
            );
            seen += 1;
        }
    }
    assert!(seen > 0);
    c.cancel().await.unwrap();
}

/// An app with these limits.
async fn app_with(limits: LimitSettings) -> TestApp {
    spawn_app_opts(
        jwt_config(),
        TestOptions {
            limits,
            ..TestOptions::default()
        },
    )
    .await
}

/// An app whose credentials may hold `cap` MCP connections each.
async fn capped_app(cap: i64) -> TestApp {
    capped_app_holding(cap, LimitSettings::default().max_connections).await
}

/// The same, on a replica that holds at most `held` connections in all.
async fn capped_app_holding(cap: i64, held: usize) -> TestApp {
    app_with(LimitSettings {
        rate_per_sec: 1_000,
        max_connections_per_credential: cap,
        max_connections: held,
        ..Default::default()
    })
    .await
}

/// Finding 2: `initialize` cannot grow the server's memory: oversize
/// parameters are refused and kept nowhere, a credential's open connections are
/// capped, and a connection that cannot be recorded leaves nothing behind.
#[tokio::test]
async fn initialize_is_bounded_per_credential() {
    let app = capped_app(3).await;
    let http = reqwest::Client::new();
    let init = |caps: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "big", "version": "0"}}})
    };
    let big = init(json!({"experimental": {"blob": {"x": "a".repeat(20 * 1024)}}}));
    let t = token("acme", "greedy");
    let resp = http
        .post(app.mcp_url())
        .bearer_auth(&t)
        .header("accept", "application/json, text/event-stream")
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!("payload_too_large"));
    // The same with an escape in the method's name, which rmcp reads as
    // initialize all the same.
    let escaped = serde_json::to_string(&big)
        .unwrap()
        .replace("\"initialize\"", "\"initializ\\u0065\"");
    assert!(escaped.contains("initializ\\u0065"));
    let resp = http
        .post(app.mcp_url())
        .bearer_auth(&t)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(escaped)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(count_rows(&app, "mcp_connections").await, 0);

    // Three connections per credential; the fourth initialize is 429.
    let base = format!("http://{}", app.addr);
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(raw_connect(&base, &t).await);
    }
    let resp = http
        .post(app.mcp_url())
        .bearer_auth(&t)
        .header("accept", "application/json, text/event-stream")
        .json(&init(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(resp.headers().contains_key("retry-after"));
    // Another credential is not affected; closing one frees a place (204).
    raw_connect(&base, &token("acme", "other")).await;
    let resp = http
        .delete(app.mcp_url())
        .bearer_auth(&t)
        .header("mcp-session-id", &conns[0])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    raw_connect(&base, &t).await;
    assert_eq!(count_rows(&app, "mcp_connections").await, 5);
}

/// Initializes that race cannot take a credential past its cap. The front
/// door counts a credential's connections outside any transaction, so every
/// initialize of a burst passed that count; the store now counts again inside
/// the write that records the connection, with the tenant claimed, and the
/// ones past the cap are 429 with nothing recorded and nothing kept by rmcp
/// (the replica, which holds 5, still takes two more).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_initializes_stay_within_the_cap() {
    const N: usize = 12;
    let app = capped_app_holding(3, 5).await;
    let racers = vec![token("acme", "racer"); N];
    assert_eq!(race_initializes(&app, racers).await, (3, N - 3));
    assert_eq!(count_rows(&app, "mcp_connections").await, 3);
    let base = format!("http://{}", app.addr);
    for _ in 0..2 {
        raw_connect(&base, &token("acme", "another")).await;
    }
    assert_eq!(count_rows(&app, "mcp_connections").await, 5);
}

/// The tenant's cap holds the same way when every racer is a subject of its
/// own (an identity provider can mint any number): 12 at once, cap 3, and
/// another tenant is not held back by the full one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_subjects_stay_within_the_tenant_cap() {
    const N: usize = 12;
    let app = app_with(LimitSettings {
        rate_per_sec: 1_000,
        max_connections_per_tenant: 3,
        ..Default::default()
    })
    .await;
    let racers = (0..N)
        .map(|i| token("acme", &format!("racer-{i}")))
        .collect();
    assert_eq!(race_initializes(&app, racers).await, (3, N - 3));
    assert_eq!(count_rows(&app, "mcp_connections").await, 3);
    raw_connect(&format!("http://{}", app.addr), &token("globex", "one")).await;
    assert_eq!(count_rows(&app, "mcp_connections").await, 4);
}

/// Send one `initialize` per token, all released at once; how many opened a
/// connection and how many were refused with 429 (anything else fails).
async fn race_initializes(app: &TestApp, tokens: Vec<String>) -> (usize, usize) {
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "racer", "version": "0"}}});
    let barrier = Arc::new(tokio::sync::Barrier::new(tokens.len()));
    let mut tasks = Vec::new();
    for t in tokens {
        let (http, url, init, barrier) =
            (http.clone(), app.mcp_url(), init.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            http.post(url)
                .bearer_auth(&t)
                .header("accept", "application/json, text/event-stream")
                .json(&init)
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let (mut opened, mut refused) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            StatusCode::OK => opened += 1,
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("initialize answered {other}"),
        }
    }
    (opened, refused)
}

/// The real binary, on the test's store, with extra environment.
async fn server(db: &TestBackend, env: &[(&str, &str)]) -> ServerProcess {
    ServerProcess::start(env!("CARGO_BIN_EXE_brain"), db, env).await
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Finding 2, measured: 200 initializes carrying ~900 KB of capabilities each
/// leave the server's resident memory within 64 MiB of where it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_initializes_do_not_grow_memory() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[("BRAIN_MAX_CONNECTIONS_PER_CREDENTIAL", "1000")]).await;
    let pid = srv.child.id().unwrap();
    let t = token("acme", "greedy");
    let http = reqwest::Client::new();
    // Warm up allocator and pool with a normal connection first.
    raw_connect(&srv.base, &t).await;
    let before = rss_kib(pid);
    let body = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "clientInfo": {"name": "big", "version": "0"},
        "capabilities": {"experimental": {"blob": {"x": "a".repeat(900 * 1024)}}}}}),
    )
    .unwrap();
    let mut refused = 0;
    for _ in 0..200 {
        let resp = http
            .post(format!("{}/mcp", srv.base))
            .bearer_auth(&t)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        refused += usize::from(resp.status() == StatusCode::PAYLOAD_TOO_LARGE);
    }
    assert_eq!(refused, 200);
    let after = rss_kib(pid);
    let grown_mib = after.saturating_sub(before) / 1024;
    assert!(
        grown_mib < 64,
        "RSS grew {grown_mib} MiB ({before} → {after} KiB)"
    );
}

/// Finding 3: 300 sockets trickling a request's headers, and 50 that send
/// nothing, are closed within 20 s (the header deadline is 10 s) while /healthz
/// keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_sockets_are_cut_while_health_answers() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[]).await;
    let addr = srv.base.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let mut tasks = Vec::new();
    // Sockets connected (and, for the slow ones, their request begun).
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..300 {
        let (addr, open) = (addr.clone(), open.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let _ = s
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
                .await;
            open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // One header byte a second, until the server hangs up.
            let mut buf = [0u8; 256];
            loop {
                if s.write_all(b"X").await.is_err() {
                    return Instant::now();
                }
                match tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => return Instant::now(),
                    Ok(Ok(_)) => return Instant::now(), // an error status, then close
                    Err(_) => {}
                }
                if started.elapsed() > Duration::from_secs(40) {
                    panic!("a slow socket was never cut");
                }
            }
        }));
    }
    // Sockets that send nothing at all are cut by the same deadline.
    for _ in 0..50 {
        let (addr, open) = (addr.clone(), open.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
            open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buf = [0u8; 16];
            let _ = tokio::time::timeout(Duration::from_secs(40), s.read(&mut buf)).await;
            Instant::now()
        }));
    }
    // Health is asked while all 350 hold their sockets.
    while open.load(std::sync::atomic::Ordering::SeqCst) < 350 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sockets did not connect"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let health = reqwest::Client::new()
        .get(format!("{}/healthz", srv.base))
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    for t in tasks {
        let cut = t.await.unwrap();
        assert!(
            cut.duration_since(started) < Duration::from_secs(20),
            "cut after {:?}",
            cut.duration_since(started)
        );
    }
}

/// A socket that opens HTTP/2 in cleartext (the preface and a SETTINGS
/// frame) and then sends nothing more is cut quickly: brain serves HTTP/1.1
/// only. hyper's HTTP/2 server has no idle deadline and its pings close only
/// peers that do not answer them, so a client that answered them held its
/// socket for good; served, this silent one was cut only after about 30 s,
/// when a ping went unanswered.
#[tokio::test]
async fn cleartext_http2_is_not_served() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[]).await;
    let addr = srv.base.trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let closed = loop {
        match tokio::time::timeout(Duration::from_secs(45), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break started.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => panic!("the socket was never closed"),
        }
    };
    assert!(closed < Duration::from_secs(12), "closed after {closed:?}");
}

/// One credential cannot hold more than its in-flight places, however slowly
/// it asks: GET streams (rmcp keeps many per connection) hold theirs while
/// open, the next request is 429, another credential is not affected, and
/// closing the streams gives the places back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_streams_hold_a_credentials_places() {
    let app = app_with(LimitSettings {
        rate_per_sec: 1_000,
        max_in_flight_per_credential: 4,
        ..Default::default()
    })
    .await;
    let base = format!("http://{}", app.addr);
    let t = token("acme", "streamer");
    let conn = raw_connect(&base, &t).await;
    let http = reqwest::Client::new();
    let mut streams = Vec::new();
    for _ in 0..4 {
        let resp = http
            .get(app.mcp_url())
            .bearer_auth(&t)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &conn)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        streams.push(resp);
    }
    let (status, _) = raw_rpc(&base, &t, &conn, "tools/list", json!({})).await;
    assert_eq!(status, 429, "a fifth request while four streams are open");
    let other = token("acme", "someone-else");
    let other_conn = raw_connect(&base, &other).await;
    let (status, _) = raw_rpc(&base, &other, &other_conn, "tools/list", json!({})).await;
    assert_eq!(status, 200, "another credential is not affected");
    // At the cap, a DELETE still ends the connection, and its streams with it.
    let resp = http
        .delete(app.mcp_url())
        .bearer_auth(&t)
        .header("mcp-session-id", &conn)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT, "a DELETE at the cap");
    drop(streams);
    let mut status = 0;
    for _ in 0..50 {
        let fresh = http
            .post(app.mcp_url())
            .bearer_auth(&t)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "again", "version": "0"}}}),
            )
            .send()
            .await
            .unwrap();
        status = fresh.status().as_u16();
        if status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the places came back with the streams");
}

/// A request that sends its headers and then holds back its body: the
/// socket, kept open while the server waits for the body.
async fn held_body(app: &TestApp, method: &str, path: &str, token: &str) -> tokio::net::TcpStream {
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nmcp-session-id: none\r\nContent-Length: 1000\r\n\r\n"
    );
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    s
}

/// The status line of what the server answers on `s` within 5 s ("" when
/// it answers nothing).
async fn answered_within_5s(s: &mut tokio::net::TcpStream) -> String {
    let mut buf = vec![0u8; 512];
    match tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf)).await {
        Ok(Ok(n)) => String::from_utf8_lossy(&buf[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_owned(),
        _ => String::new(),
    }
}

/// A DELETE takes no in-flight place, so it may hold nothing either: one
/// that says it carries a body is refused at once (413), before any of it
/// is read, instead of holding a socket and up to 1 MiB for 30 s.
#[tokio::test]
async fn a_delete_that_declares_a_body_is_refused_before_reading_it() {
    let app = app_with(LimitSettings::default()).await;
    let t = token("acme", "deleter");
    let mut s = held_body(&app, "DELETE", "/mcp", &t).await;
    let status = answered_within_5s(&mut s).await;
    assert!(status.starts_with("HTTP/1.1 413"), "{status:?}");
}

/// The admin routes read bodies too: a credential's requests there hold its
/// in-flight places while their bodies arrive (any role: the routes check it
/// after), so one credential cannot hold sockets and bodies without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_bodies_hold_a_credentials_places() {
    let app = app_with(LimitSettings {
        rate_per_sec: 1_000,
        max_in_flight_per_credential: 4,
        ..Default::default()
    })
    .await;
    let t = token("acme", "holder");
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(held_body(&app, "POST", "/brain-admin/elevations", &t).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut fifth = held_body(&app, "POST", "/brain-admin/elevations", &t).await;
    let status = answered_within_5s(&mut fifth).await;
    assert!(status.starts_with("HTTP/1.1 429"), "{status:?}");
    // Another credential is not affected.
    let other = token("acme", "someone-else");
    let resp = reqwest::Client::new()
        .get(app.url("/brain-admin/elevations"))
        .bearer_auth(&other)
        .send()
        .await
        .unwrap();
    assert_ne!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    // Closing the held requests gives the places back.
    drop(held);
    let mut status = StatusCode::TOO_MANY_REQUESTS;
    for _ in 0..50 {
        status = reqwest::Client::new()
            .get(app.url("/brain-admin/elevations"))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap()
            .status();
        if status != StatusCode::TOO_MANY_REQUESTS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(
        status,
        StatusCode::TOO_MANY_REQUESTS,
        "the places came back"
    );
}

/// Finding 4: a burst from one credential is answered 429 with Retry-After and
/// writes no receipts, while another tenant's calls go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bursts_are_limited_per_tenant_and_credential() {
    let app = app_with(LimitSettings {
        rate_per_sec: 5,
        max_connections_per_credential: 64,
        ..Default::default()
    })
    .await;
    let base = format!("http://{}", app.addr);
    // Same subject in two tenants: separate buckets.
    let a = token("acme", "admin");
    let b = token("globex", "admin");
    let conn_a = raw_connect(&base, &a).await;
    let conn_b = raw_connect(&base, &b).await;
    let http = reqwest::Client::new();
    let call = |t: &str, conn: &str, n: u64| {
        http.post(app.mcp_url())
            .bearer_auth(t)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", conn)
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                "name": "brain_remember", "arguments": {"project": "p", "kind": "fact", "text": "t"}}}))
            .send()
    };
    let mut limited = 0;
    let mut passed = 0;
    for n in 0..40 {
        let r = call(&a, &conn_a, 1000 + n).await.unwrap();
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            limited += 1;
            assert!(r.headers().contains_key("retry-after"));
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["error"]["code"], json!("rate_limited"));
        } else {
            assert_eq!(r.status(), StatusCode::OK);
            let _ = r.text().await;
            passed += 1;
        }
    }
    assert!(limited > 0, "a burst of 40 at 5/s must be limited");
    // The other tenant's same-named subject is unaffected.
    let r = call(&b, &conn_b, 5000).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let _ = r.text().await;
    // Refused calls wrote nothing: one receipt per call that passed.
    let acme = brain_core::ids::TenantId::parse("acme").unwrap();
    let receipts = app.store.receipts(&acme).await.unwrap();
    let remembers = receipts
        .iter()
        .filter(|r| r.tool == "brain_remember")
        .count();
    assert_eq!(remembers, passed);

    // The admin limiter: an agent named "admin" in acme cannot spend the
    // operator "admin"'s calls in globex (nor its own tenant's operator's).
    let agent_admin = token("acme", "admin");
    for _ in 0..40 {
        let _ = http
            .get(app.url("/brain-admin/elevations"))
            .bearer_auth(&agent_admin)
            .send()
            .await
            .unwrap();
    }
    for t in [
        token_with(json!({"tenant": "globex", "sub": "admin", "role": "operator"})),
        token_with(json!({"tenant": "acme", "sub": "admin", "role": "operator"})),
    ] {
        let r = http
            .get(app.url("/brain-admin/elevations"))
            .bearer_auth(&t)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
}

/// Finding 5: input and log hygiene.
#[tokio::test]
async fn hostile_input_is_refused_cleanly() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let s = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let receipts_before = count_rows(&app, "receipts").await;
    // NUL and other C0 controls: invalid_argument on both stores, nothing written.
    for (field, value) in [("summary", "a\u{0}b"), ("next_focus", "esc\u{1b}[31m")] {
        let mut args = json!({"session_id": s["session"]["session_id"], "expected_client_key": "k",
            "summary": "s", "next_focus": "n", "expected_focus_revision": 0});
        args[field] = json!(value);
        let e = brain_testkit::app::refused(&c, "brain_session_end", args).await;
        assert_eq!(e["code"], json!("invalid_argument"), "{e}");
        assert_eq!(e["status"], json!(422));
        assert_eq!(e["details"]["field"], json!(field));
    }
    let e = brain_testkit::app::refused(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "fact", "text": "ok", "tags": ["t\u{0}"]}),
    )
    .await;
    assert_eq!(e["details"]["field"], json!("tags[0]"));
    assert_eq!(count_rows(&app, "receipts").await, receipts_before);
    assert_eq!(count_rows(&app, "artifacts").await, 0);
    let got = ok(
        &c,
        "brain_session_get",
        json!({"session_id": s["session"]["session_id"]}),
    )
    .await;
    assert_eq!(got["session"]["status"], json!("open"));
    c.cancel().await.unwrap();

    let http = reqwest::Client::new();
    // A client request id that could forge log fields is replaced.
    let r = http
        .get(app.url("/healthz"))
        .header("x-request-id", "x\" tenant=evil")
        .send()
        .await
        .unwrap();
    let rid = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(!rid.contains("evil") && brain_server::http::limits::request_id_ok(&rid));
    let r = http
        .get(app.url("/healthz"))
        .header("x-request-id", "trace-42.a_b")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "trace-42.a_b");
    // Userinfo in Host never passes the guard.
    let r = http
        .post(app.mcp_url())
        .header("host", "localhost:1@evil.com")
        .bearer_auth(token("acme", "a"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A token issued in the future, or with a 100 KB subject, is refused.
    let future = chrono::Utc::now().timestamp() + 3600;
    for t in [
        token_with(json!({"iat": future})),
        token_with(json!({"sub": "s".repeat(100 * 1024)})),
        token_with(json!({"sub": "nul\u{0}sub"})),
    ] {
        let r = http
            .post(app.mcp_url())
            .bearer_auth(t)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // 413 is the error envelope on every route, chunked or not.
    let huge = vec![b'a'; 2 << 20];
    for path in ["/mcp", "/brain-admin/elevations"] {
        let r = http
            .post(app.url(path))
            .bearer_auth(operator("op"))
            .header("content-type", "application/json")
            .body(huge.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], json!("payload_too_large"), "{path}");
    }
    // A chunked body (no Content-Length) over the limit: the same envelope.
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Transfer-Encoding: chunked\r\n\r\n",
        token("acme", "a")
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 256 * 1024];
    for _ in 0..5 {
        if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .is_err()
            || s.write_all(&chunk).await.is_err()
            || s.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("payload_too_large"), "{answer}");
}

/// Finding 5: an expired connection is closed in the database with its tracer
/// session (not only forgotten in memory), and refused afterwards.
#[tokio::test]
async fn expired_connections_close_everywhere() {
    let app = spawn_app_opts(
        jwt_config(),
        TestOptions {
            connection_idle_secs: 2,
            ..TestOptions::default()
        },
    )
    .await;
    let base = format!("http://{}", app.addr);
    let t = token("acme", "sleepy");
    let conn = raw_connect(&base, &t).await;
    assert_eq!(latest_connection(&app, "brain|sleepy").await, conn);
    let acme = brain_core::ids::TenantId::parse("acme").unwrap();
    let tracer = app
        .store
        .connection_get(&acme, &conn)
        .await
        .unwrap()
        .unwrap()
        .tracer_session
        .unwrap();
    // No request touches it; the sweep closes it by itself.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let open = count_rows(&app, "mcp_connections WHERE closed_at IS NULL").await;
        if open == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the connection was never closed");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let detail = app.store.session_get(&acme, tracer).await.unwrap();
    assert_ne!(
        detail.session.status.as_str(),
        "open",
        "its tracer closed too"
    );
    let (status, _) = brain_testkit::app::raw_rpc(&base, &t, &conn, "tools/list", json!({})).await;
    assert_eq!(status, 404, "an expired connection is refused");
}

/// Finding 5: with `RUST_LOG=info` (which names no rmcp directive), rmcp still
/// logs at warn, so no connection id reaches the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_ids_stay_out_of_logs() {
    let db = TestBackend::create().await;
    let srv = server(&db, &[("RUST_LOG", "info")]).await;
    let t = token("acme", "a");
    let conn = raw_connect(&srv.base, &t).await;
    raw_tool(
        &srv.base,
        &t,
        &conn,
        "brain_focus_get",
        json!({"project": "p"}),
    )
    .await;
    let resp = reqwest::Client::new()
        .delete(format!("{}/mcp", srv.base))
        .bearer_auth(&t)
        .header("mcp-session-id", &conn)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NO_CONTENT);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = srv.log.lock().unwrap().clone();
    assert!(
        log.contains("brain_focus_get"),
        "tool calls are logged: {log}"
    );
    assert!(
        !log.contains(&conn),
        "a connection id reached the log:\n{log}"
    );
    assert!(!log.contains(&t), "a token reached the log");
}

/// Send raw bytes on a fresh socket; what the server answered (until it closed
/// or `wait` passed).
async fn raw_http(addr: std::net::SocketAddr, bytes: &[u8], wait: Duration) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(wait, s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// An app whose credentials may hold two connections each.
async fn limited_app() -> TestApp {
    app_with(LimitSettings {
        rate_per_sec: 1_000,
        max_connections_per_credential: 2,
        ..Default::default()
    })
    .await
}

/// An agent token of an operator's subject cannot revoke that operator's elevation, and the refusal names no connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_token_cannot_revoke_its_operators_elevation() {
    let app = limited_app().await;
    let base = format!("http://{}", app.addr);
    let http = reqwest::Client::new();
    let (op, ag) = (operator("alice"), agent("alice"));
    // An agent token of the operator's subject cannot revoke its elevation.
    let conn = raw_connect(&base, &op).await;
    let (st, e) = grant(&app, &op, json!({"mcp_session_id": conn, "reason": "r"})).await;
    assert_eq!(st, StatusCode::CREATED);
    let id = e["id"].as_str().unwrap();
    let r = http
        .delete(app.url(&format!("/brain-admin/elevations/{id}")))
        .bearer_auth(&ag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(
        !r.text().await.unwrap().contains(&conn),
        "no connection id in the refusal"
    );
    let listed: Value = http
        .get(app.url("/brain-admin/elevations"))
        .bearer_auth(&op)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed["elevations"].as_array().unwrap().len(),
        1,
        "still active"
    );
}

/// Connection limits count each role apart: an agent token at its cap leaves the same subject's operator connections alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connection_limits_count_each_role_apart() {
    let app = limited_app().await;
    let base = format!("http://{}", app.addr);
    let http = reqwest::Client::new();
    let (op, ag) = (operator("alice"), agent("alice"));
    // Limits are per role too: an agent at its cap leaves the operator's alone.
    raw_connect(&base, &ag).await;
    raw_connect(&base, &ag).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}});
    let r = http
        .post(app.mcp_url())
        .bearer_auth(&ag)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    raw_connect(&base, &op).await;
}

/// A NUL in initialize parameters is 422 on both stores, and no connection is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nul_in_initialize_is_refused_and_records_nothing() {
    let app = limited_app().await;
    let http = reqwest::Client::new();
    // A NUL in initialize parameters is 422 on both stores, nothing recorded.
    let before = count_rows(&app, "mcp_connections").await;
    let r = http
        .post(app.mcp_url())
        .bearer_auth(token("acme", "nul"))
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "x\u{0}y", "version": "1"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(count_rows(&app, "mcp_connections").await, before);
}

/// A huge method name, a body that is not JSON and a made-up protocol version are refused in the error envelope, echoing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_requests_are_refused_without_echoing_them() {
    let app = limited_app().await;
    let base = format!("http://{}", app.addr);
    let http = reqwest::Client::new();
    let op = operator("alice");
    let conn = raw_connect(&base, &op).await;
    // A huge method name is refused, not echoed.
    let r = http
        .post(app.mcp_url())
        .bearer_auth(&op)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &conn)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "x".repeat(100_000)}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().len() < 1_000);

    // rmcp's plain-text refusals come back in the error envelope, echoing nothing.
    for (ct, body, version) in [
        ("application/json", "{not json", "2025-11-25"),
        (
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "evil-version-echo",
        ),
    ] {
        let r = http
            .post(app.mcp_url())
            .bearer_auth(&op)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", ct)
            .header("mcp-session-id", &conn)
            .header("mcp-protocol-version", version)
            .body(body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_client_error(), "{}", r.status());
        let text = r.text().await.unwrap();
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
        assert!(v["error"]["code"].is_string(), "{text}");
        assert!(!text.contains("evil-version-echo"));
    }
}

/// Two Host headers, or an absolute-form target naming another host, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_host_or_an_absolute_target_is_refused() {
    let app = limited_app().await;
    // Two Host headers, or an absolute-form target naming another host: 403.
    let t = token("acme", "a");
    let dup = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.com\r\nAuthorization: Bearer {t}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let answer = raw_http(app.addr, dup.as_bytes(), Duration::from_secs(3)).await;
    assert!(
        answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );
    let absolute = format!(
        "POST http://user@evil.com/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {t}\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let answer = raw_http(app.addr, absolute.as_bytes(), Duration::from_secs(3)).await;
    assert!(
        answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"),
        "{answer}"
    );
}

/// An unauthenticated request is answered without its (slow) body being read.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unauthenticated_request_is_answered_before_its_body() {
    let app = limited_app().await;
    // An unauthenticated request is answered without its (slow) body being
    // read: the body never completes, so any answer at all was given first.
    let slow = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n{";
    let answer = raw_http(app.addr, slow, Duration::from_secs(3)).await;
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
}

/// C1 controls in text, bidi overrides in a client key and a newline in a JWT subject are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_characters_in_text_keys_and_subjects_are_refused() {
    let app = limited_app().await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}});
    // C1 controls in text, bidi overrides in a client key, a newline in sub.
    let c = app.client(&token("acme", "a")).await;
    let e = brain_testkit::app::refused(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "fact", "text": "csi\u{9b}31m"}),
    )
    .await;
    assert_eq!(e["code"], json!("invalid_argument"));
    let e = brain_testkit::app::refused(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "ali\u{202e}ecb"}),
    )
    .await;
    assert_eq!(e["code"], json!("invalid_argument"));
    c.cancel().await.unwrap();
    let r = http
        .post(app.mcp_url())
        .bearer_auth(token_with(json!({"sub": "a\nb"})))
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
}

/// An `initialize` at `url` with `token`: its status, `error.code` (if any)
/// and whether it says when to retry.
async fn initialize_at(url: String, token: String) -> (StatusCode, Value, bool) {
    let resp = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let retry = resp.headers().contains_key("retry-after");
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    (status, body["error"]["code"].clone(), retry)
}

/// Made-up shared tokens cannot take the database from the calls: a token not
/// of the minted shape is refused without a lookup, and lookups run a few at a
/// time per replica (found by stop 30's resource review: every `brain_st_…`
/// bearer was a query on the shared pool, before any per-credential limit can
/// know whose request it is). PostgreSQL: a lock on `shared_tokens` makes
/// every lookup hang, so the test sees which requests asked the database.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn made_up_shared_tokens_cannot_take_the_pool() {
    // PostgreSQL's pool is what is at stake: SQLite has none to take.
    let app = spawn_app_opts(
        jwt_config(),
        TestOptions {
            postgres: true,
            ..TestOptions::default()
        },
    )
    .await;
    let TestBackend::Postgres(db) = &app.db else {
        unreachable!("TestOptions::postgres opens PostgreSQL");
    };
    let tenant = brain_core::ids::TenantId::parse("acme").unwrap();
    let (_, good) = app
        .store
        .shared_token_create(&tenant, "bots")
        .await
        .unwrap();
    let agent_client = app.client(&agent("worker")).await;

    use sqlx::Connection;
    let mut locker = sqlx::PgConnection::connect(&db.inspect_url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut locker).await.unwrap();
    sqlx::query("LOCK TABLE shared_tokens IN ACCESS EXCLUSIVE MODE")
        .execute(&mut locker)
        .await
        .unwrap();

    // More well-formed made-up tokens than the pool has connections (10).
    let made_up: Vec<_> = (0..24)
        .map(|_| {
            tokio::spawn(initialize_at(
                app.mcp_url(),
                brain_core::operators::new_shared_token_secret(),
            ))
        })
        .collect();
    // Every lookup let through waits on the lock before the checks below.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE NOT granted \
             AND relation = 'shared_tokens'::regclass",
        )
        .fetch_one(&mut locker)
        .await
        .unwrap();
        if waiting >= brain_server::http::limits::LOOKUPS_AT_ONCE as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} lookups wait on the lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Not of the minted shape: refused at once, though every lookup hangs.
    for bad in [
        "brain_st_short".to_owned(),
        format!("brain_st_{}", "A".repeat(64)),
        format!("brain_st_{}", "0".repeat(65)),
    ] {
        let answered =
            tokio::time::timeout(Duration::from_secs(5), initialize_at(app.mcp_url(), bad))
                .await
                .expect("a malformed shared token is refused without a lookup");
        assert_eq!(answered.0, StatusCode::UNAUTHORIZED);
        assert_eq!(answered.1, json!("unauthenticated"));
    }

    // The calls of a known credential still get connections.
    let written = tokio::time::timeout(
        Duration::from_secs(10),
        ok(
            &agent_client,
            "brain_remember",
            json!({"project": "p", "kind": "note", "text": "still served"}),
        ),
    )
    .await
    .expect("made-up tokens must not hold every pooled connection");
    assert_eq!(written["artifact"]["kind"], json!("note"));

    // All but the lookups in flight give up after their wait, with 429.
    let deadline = Instant::now() + Duration::from_secs(20);
    while made_up.iter().filter(|h| h.is_finished()).count() < 22 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sqlx::query("ROLLBACK").execute(&mut locker).await.unwrap();
    let mut answers = Vec::new();
    for h in made_up {
        answers.push(h.await.unwrap());
    }
    let refused_busy = answers
        .iter()
        .filter(|(s, code, retry)| {
            *s == StatusCode::TOO_MANY_REQUESTS && *code == json!("rate_limited") && *retry
        })
        .count();
    let looked_up = answers
        .iter()
        .filter(|(s, code, _)| *s == StatusCode::UNAUTHORIZED && *code == json!("unauthenticated"))
        .count();
    assert_eq!(
        (looked_up, refused_busy),
        (
            brain_server::http::limits::LOOKUPS_AT_ONCE,
            24 - brain_server::http::limits::LOOKUPS_AT_ONCE
        ),
        "{answers:?}"
    );

    // Once the lookups are free again the real token is let in.
    assert_eq!(initialize_at(app.mcp_url(), good).await.0, StatusCode::OK);
    agent_client.cancel().await.unwrap();
}

/// A client that asks and never reads the answers cannot hold its socket for
/// good (carried over from stop 30's resource review): the answers fill the
/// socket's buffers, hyper's write waits, and before the stall guard it waited
/// forever, holding the socket, the credential's in-flight places and the
/// server's graceful shutdown. Here 40 pipelined reads of a 200 KB focus
/// (about 20 MB of answers, past any buffer) are sent and nothing is read
/// until the server counts a cut write, with the guard's limit at 1 s: the
/// connection is dropped. Without the guard no write is cut in 30 s and all 40
/// answers arrive once the client reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_never_reads_is_cut() {
    let app = spawn_app_opts(
        jwt_config(),
        TestOptions {
            sockets: brain_server::serve::SocketLimits {
                write_stall: Duration::from_secs(1),
                ..Default::default()
            },
            ..TestOptions::default()
        },
    )
    .await;
    let writer = app.client(&agent("writer")).await;
    let s = ok(
        &writer,
        "brain_session_start",
        json!({"project": "p", "client_key": "w"}),
    )
    .await;
    ok(
        &writer,
        "brain_session_end",
        json!({"session_id": s["session"]["session_id"],
        "expected_client_key": "w", "summary": "big", "next_focus": "f".repeat(200_000),
        "expected_focus_revision": 0}),
    )
    .await;
    writer.cancel().await.unwrap();

    let reader = agent("reader");
    let base = format!("http://{}", app.addr);
    let id = raw_connect(&base, &reader).await;
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "brain_focus_get", "arguments": {"project": "p"}}})
    .to_string();
    let one = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {reader}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Mcp-Session-Id: {id}\r\nMcp-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    socket.write_all(one.repeat(40).as_bytes()).await.unwrap();
    // Read nothing until the server has cut a write (however slowly a loaded
    // machine fills the buffers), or for 30 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    while stalled_writes(&app).await == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection stayed open");
    let answered = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count();
    assert!(
        answered < 40,
        "all {answered} answers were written: the stalled write was never cut"
    );
}

/// `brain_stalled_writes_total` on the app's `/metrics` (0 before any).
async fn stalled_writes(app: &TestApp) -> u64 {
    let text = reqwest::get(app.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("brain_stalled_writes_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

//! Black-box, PostgreSQL: a write whose COMMIT reached the database but
//! whose answer was lost with its connection. The server cannot know whether
//! it took effect, so it must not say "nothing was written": it answers
//! `internal` with `details.outcome: "unknown"`, and a repeated end is
//! answered from what was stored. The fault is real: brain talks to
//! PostgreSQL through a TCP proxy that forwards the COMMIT (or the Sync of
//! a statement that commits itself) and then cuts the connection before the
//! answer comes back. (SQLite's one writer has no connection to lose; how it
//! tells a failed COMMIT apart is unit-tested in brain-store-sqlite.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use brain_testkit::app::{Client, ServerProcess, TestBackend, ok, refused, token};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Where the proxy cuts a marked connection.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Cut {
    /// After forwarding the next simple query that holds `COMMIT`.
    AfterCommit,
    /// After forwarding the next Sync (a lone statement commits at it).
    AfterSync,
}

#[derive(Clone, Copy, Debug)]
enum Act {
    /// Hold the marked message this long before forwarding it.
    Stall(Duration),
    Cut(Cut),
}

/// Each rule fires once, on the first frontend message holding its marker.
type Rules = Arc<Mutex<Vec<(Vec<u8>, Act)>>>;

/// A PostgreSQL wire proxy with fault rules.
struct Proxy {
    addr: std::net::SocketAddr,
    rules: Rules,
    cuts: Arc<Mutex<usize>>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let rules: Rules = Arc::default();
        let cuts: Arc<Mutex<usize>> = Arc::default();
        let (r, c) = (rules.clone(), cuts.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(relay(client, server, r.clone(), c.clone()));
            }
        });
        Self { addr, rules, cuts }
    }

    fn rule(&self, marker: &str, act: Act) {
        self.rules
            .lock()
            .unwrap()
            .push((marker.as_bytes().to_vec(), act));
    }

    fn cuts(&self) -> usize {
        *self.cuts.lock().unwrap()
    }

    /// Once the rule for `marker` has fired: a message holding it reached
    /// the proxy (a fired rule is dropped).
    async fn fired(&self, marker: &str) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self
            .rules
            .lock()
            .unwrap()
            .iter()
            .any(|(m, _)| m.as_slice() == marker.as_bytes())
        {
            assert!(
                std::time::Instant::now() < deadline,
                "no message held {marker}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn relay(client: TcpStream, server: TcpStream, rules: Rules, cuts: Arc<Mutex<usize>>) {
    let (mut c_read, c_write) = client.into_split();
    let (mut s_read, mut s_write) = server.into_split();
    let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = cut.clone();
    // Server to client: everything until the cut. The answer to what was
    // cut is read and dropped (so the server's socket never resets and loses
    // what it has not read yet), and the client's socket is closed.
    let back = tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut c_write = Some(c_write);
        loop {
            let n = match s_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if seen.load(std::sync::atomic::Ordering::SeqCst) {
                c_write = None; // the answer is lost with the connection
                continue;
            }
            if let Some(w) = c_write.as_mut()
                && w.write_all(&buf[..n]).await.is_err()
            {
                break;
            }
        }
    });
    // The startup message has no type byte: its length, then the rest.
    let mut len = [0u8; 4];
    if c_read.read_exact(&mut len).await.is_err() {
        return;
    }
    let mut rest = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
    if c_read.read_exact(&mut rest).await.is_err() {
        return;
    }
    let _ = s_write.write_all(&len).await;
    let _ = s_write.write_all(&rest).await;
    let mut armed: Option<Cut> = None;
    loop {
        let mut head = [0u8; 5];
        if c_read.read_exact(&mut head).await.is_err() {
            break;
        }
        let n = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; n.saturating_sub(4)];
        if c_read.read_exact(&mut body).await.is_err() {
            break;
        }
        let fired: Vec<Act> = {
            let mut rules = rules.lock().unwrap();
            let mut fired = Vec::new();
            rules.retain(|(marker, act)| {
                let hit = body.windows(marker.len()).any(|w| w == marker.as_slice());
                if hit {
                    fired.push(*act);
                }
                !hit
            });
            fired
        };
        for act in fired {
            match act {
                Act::Stall(d) => tokio::time::sleep(d).await,
                Act::Cut(c) => armed = Some(c),
            }
        }
        let commits = match armed {
            Some(Cut::AfterCommit) => {
                head[0] == b'Q' && body.windows(6).any(|w| w.eq_ignore_ascii_case(b"COMMIT"))
            }
            Some(Cut::AfterSync) => head[0] == b'S',
            None => false,
        };
        if commits {
            // Lose the answer, then send what commits.
            cut.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        if s_write.write_all(&head).await.is_err() || s_write.write_all(&body).await.is_err() {
            break;
        }
        if commits {
            *cuts.lock().unwrap() += 1;
            // brain sees its connection end when the answer comes;
            // PostgreSQL has run the message by then.
            let _ = tokio::time::timeout(Duration::from_secs(5), back).await;
            return;
        }
    }
}

/// `url` with its host and port replaced by `addr`, without TLS (the proxy
/// reads the protocol).
fn through(url: &str, addr: std::net::SocketAddr) -> (String, String) {
    let at = url
        .rfind('@')
        .map_or(url.find("://").unwrap() + 3, |i| i + 1);
    let slash = at + url[at..].find('/').unwrap();
    let upstream = url[at..slash].to_owned();
    let sep = if url.contains('?') { '&' } else { '?' };
    (
        format!("{}{addr}{}{sep}sslmode=disable", &url[..at], &url[slash..]),
        upstream,
    )
}

struct Setup {
    _db: TestBackend,
    srv: ServerProcess,
    proxy: Proxy,
    inspect: String,
}

/// A brain process whose database connections all pass through a proxy;
/// `None` on SQLite.
async fn setup() -> Option<Setup> {
    let db = TestBackend::create().await;
    let TestBackend::Postgres(pg) = &db else {
        return None;
    };
    let (_, upstream) = through(&pg.url, "127.0.0.1:1".parse().unwrap());
    let proxy = Proxy::start(upstream).await;
    let (url, _) = through(&pg.url, proxy.addr);
    let inspect = pg.inspect_url.clone();
    let srv = ServerProcess::start(
        env!("CARGO_BIN_EXE_brain"),
        &db,
        &[("DATABASE_URL", url.as_str())],
    )
    .await;
    Some(Setup {
        _db: db,
        srv,
        proxy,
        inspect,
    })
}

async fn client(srv: &ServerProcess) -> Client {
    srv.client(&token("acme", "a")).await
}

async fn artifacts_holding(inspect: &str, marker: &str) -> i64 {
    let pool = sqlx::PgPool::connect(inspect).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts WHERE text LIKE $1")
        .bind(format!("%{marker}%"))
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

fn assert_unknown(e: &Value) {
    assert_eq!(e["code"], "internal", "{e}");
    assert_eq!(e["details"]["outcome"], "unknown", "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("may or may not"), "{e}");
    assert!(!message.contains("nothing was written"), "{e}");
}

/// A remember into a known project runs alone, in its own statement's
/// transaction: it commits at its Sync. Its answer lost, the caller hears
/// the outcome is unknown, and the artifact is in fact there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_write_whose_answer_is_lost_is_told_unknown() {
    let Some(s) = setup().await else { return };
    let c = client(&s.srv).await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "first"}),
    )
    .await;
    s.proxy.rule("marker-lone-9f3", Act::Cut(Cut::AfterSync));
    let e = refused(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "marker-lone-9f3"}),
    )
    .await;
    assert_eq!(s.proxy.cuts(), 1);
    assert_unknown(&e);
    assert_eq!(artifacts_holding(&s.inspect, "marker-lone-9f3").await, 1);
    // The server goes on: the next write commits and is answered.
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "after"}),
    )
    .await;
}

/// Three remembers queue behind a fourth (held in the proxy), so they share
/// one transaction and one COMMIT (the group commit). The COMMIT's answer
/// lost, each of the three hears the outcome is unknown; all three are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commit_whose_answer_is_lost_tells_every_member_unknown() {
    let Some(s) = setup().await else { return };
    let c = client(&s.srv).await;
    ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "first"}),
    )
    .await;
    s.proxy
        .rule("marker-hold-a11", Act::Stall(Duration::from_millis(600)));
    s.proxy.rule("marker-batch-b22", Act::Cut(Cut::AfterCommit));
    let held = c.peer().clone();
    let first = tokio::spawn(async move {
        ok(
            &held,
            "brain_remember",
            json!({"project": "p", "kind": "note", "text": "marker-hold-a11"}),
        )
        .await
    });
    // The held remember is in the proxy, holding the tenant's group commit.
    s.proxy.fired("marker-hold-a11").await;
    let texts = ["marker-batch-x1", "marker-batch-b22 x2", "marker-batch-x3"];
    let batch = futures_join(&c, &texts).await;
    first.await.unwrap();
    assert_eq!(s.proxy.cuts(), 1, "the batch's COMMIT was not cut");
    for e in &batch {
        assert_unknown(e);
    }
    assert_eq!(artifacts_holding(&s.inspect, "marker-batch-").await, 3);
}

async fn futures_join(c: &Client, texts: &[&str]) -> Vec<Value> {
    let calls = texts.iter().map(|t| {
        let peer = c.peer().clone();
        let text = (*t).to_owned();
        tokio::spawn(async move {
            refused(
                &peer,
                "brain_remember",
                json!({"project": "p", "kind": "note", "text": text}),
            )
            .await
        })
    });
    let mut out = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        out.push(call.await.unwrap());
    }
    out
}

/// An end sends its last statement and COMMIT in one message. Its answer
/// lost, the agent hears the outcome is unknown; the focus did move, and the
/// same end sent again is answered from what was stored (a safe retry).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_end_whose_answer_is_lost_is_told_unknown_and_retries_safely() {
    let Some(s) = setup().await else { return };
    let c = client(&s.srv).await;
    let started = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "k"}),
    )
    .await;
    let id = started["session"]["session_id"].clone();
    let end = json!({"session_id": id, "expected_client_key": "k", "summary": "s",
                     "next_focus": "the plan: marker-end-c33", "expected_focus_revision": 0});
    s.proxy.rule("marker-end-c33", Act::Cut(Cut::AfterCommit));
    let e = refused(&c, "brain_session_end", end.clone()).await;
    assert_eq!(s.proxy.cuts(), 1);
    assert_unknown(&e);
    let focus = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(focus["revision"], 1, "{focus}");
    assert_eq!(focus["body"], "the plan: marker-end-c33", "{focus}");
    let again = ok(&c, "brain_session_end", end).await;
    assert_eq!(again["focus_outcome"], "applied", "{again}");
    assert_eq!(again["focus_revision_at_end"], 1, "{again}");
    assert_eq!(again["replayed"], true, "{again}");
}

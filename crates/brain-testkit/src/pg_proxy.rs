//! A PostgreSQL wire proxy for black-box tests: brain's database
//! connections pass through it, and it can stall a marked message, cut a
//! connection after forwarding what commits (so the answer is lost), and
//! list the statements sent through it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A statement as it reached PostgreSQL: its text, and for an extended
/// query the raw bytes of its Bind (where its parameters are).
#[derive(Debug, Clone)]
pub struct Statement {
    /// Which of the proxy's connections sent it (numbered as accepted).
    pub conn: usize,
    pub text: String,
    pub bind: Vec<u8>,
}

type Sent = Arc<Mutex<Vec<Statement>>>;

/// A NUL-terminated string at the start of `b`, and what follows it.
fn cstr(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = b.iter().position(|&c| c == 0)?;
    Some((&b[..end], &b[end + 1..]))
}

/// Note a frontend message: a Parse names a statement's text, a Bind runs
/// one, a simple Query runs its text.
fn record(
    conn: usize,
    kind: u8,
    body: &[u8],
    prepared: &mut std::collections::HashMap<Vec<u8>, String>,
    sent: &Sent,
) {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    match kind {
        b'P' => {
            if let Some((name, rest)) = cstr(body)
                && let Some((query, _)) = cstr(rest)
            {
                prepared.insert(name.to_vec(), text(query));
            }
        }
        b'B' => {
            if let Some((_portal, rest)) = cstr(body)
                && let Some((name, _)) = cstr(rest)
                && let Some(query) = prepared.get(name)
            {
                sent.lock().unwrap().push(Statement {
                    conn,
                    text: query.clone(),
                    bind: body.to_vec(),
                });
            }
        }
        b'Q' => {
            if let Some((query, _)) = cstr(body) {
                sent.lock().unwrap().push(Statement {
                    conn,
                    text: text(query),
                    bind: Vec::new(),
                });
            }
        }
        _ => {}
    }
}

/// Where the proxy cuts a marked connection.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Cut {
    /// After forwarding the next simple query that holds `COMMIT`.
    AfterCommit,
    /// After forwarding the next Sync (a lone statement commits at it).
    AfterSync,
}

#[derive(Clone, Copy, Debug)]
pub enum Act {
    /// Hold the marked message this long before forwarding it.
    Stall(Duration),
    Cut(Cut),
}

/// Each rule fires once, on the first frontend message holding its marker.
type Rules = Arc<Mutex<Vec<(Vec<u8>, Act)>>>;

/// A PostgreSQL wire proxy with fault rules.
pub struct Proxy {
    pub addr: std::net::SocketAddr,
    rules: Rules,
    cuts: Arc<Mutex<usize>>,
    sent: Sent,
}

impl Proxy {
    /// A proxy on a port of its own, relaying to `upstream` (`host:port`).
    pub async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let rules: Rules = Arc::default();
        let cuts: Arc<Mutex<usize>> = Arc::default();
        let sent: Sent = Arc::default();
        let (r, c, w) = (rules.clone(), cuts.clone(), sent.clone());
        tokio::spawn(async move {
            let mut accepted = 0;
            while let Ok((client, _)) = listener.accept().await {
                accepted += 1;
                let server = TcpStream::connect(&upstream).await.unwrap();
                tokio::spawn(relay(
                    client,
                    server,
                    r.clone(),
                    c.clone(),
                    (accepted, w.clone()),
                ));
            }
        });
        Self {
            addr,
            rules,
            cuts,
            sent,
        }
    }

    /// Act on the first frontend message that holds `marker`.
    pub fn rule(&self, marker: &str, act: Act) {
        self.rules
            .lock()
            .unwrap()
            .push((marker.as_bytes().to_vec(), act));
    }

    /// How many connections were cut.
    pub fn cuts(&self) -> usize {
        *self.cuts.lock().unwrap()
    }

    /// Once the rule for `marker` has fired: a message holding it reached
    /// the proxy (a fired rule is dropped).
    pub async fn fired(&self, marker: &str) {
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

    /// The statements run through the proxy since the last call, in the
    /// order they reached it: each simple query's text, and each extended
    /// query's text at its Bind (a statement prepared once and run again
    /// is listed each time it runs), with the Bind's parameters.
    pub fn take_sent(&self) -> Vec<Statement> {
        std::mem::take(&mut *self.sent.lock().unwrap())
    }
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    rules: Rules,
    cuts: Arc<Mutex<usize>>,
    (conn, sent): (usize, Sent),
) {
    // This connection's prepared statements, by name.
    let mut prepared: std::collections::HashMap<Vec<u8>, String> = Default::default();
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
        record(conn, head[0], &body, &mut prepared, &sent);
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
pub fn through(url: &str, addr: std::net::SocketAddr) -> (String, String) {
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

/// The real `brain` binary on a PostgreSQL database of its own, every
/// database connection through a [`Proxy`].
pub struct ProxiedServer {
    pub db: crate::app::TestBackend,
    pub srv: crate::app::ServerProcess,
    pub proxy: Proxy,
    /// The admin role's URL, straight to the database.
    pub inspect: String,
}

impl ProxiedServer {
    /// `bin` is the test's `env!("CARGO_BIN_EXE_brain")`. Always on
    /// PostgreSQL, on the SQLite pass too: what the proxy sees is a database
    /// connection, which SQLite has none of.
    pub async fn start(bin: &str) -> Self {
        let pg = crate::TestDb::create().await.expect("test database");
        let (_, upstream) = through(&pg.url, "127.0.0.1:1".parse().unwrap());
        let proxy = Proxy::start(upstream).await;
        let (url, _) = through(&pg.url, proxy.addr);
        let inspect = pg.inspect_url.clone();
        let db = crate::app::TestBackend::Postgres(pg);
        let srv =
            crate::app::ServerProcess::start(bin, &db, &[("DATABASE_URL", url.as_str())]).await;
        Self {
            db,
            srv,
            proxy,
            inspect,
        }
    }
}

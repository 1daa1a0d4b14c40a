//! The load: N workers, each with its own MCP connection (initialize, then the
//! workload in a loop until the deadline), latencies kept per call.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

#[derive(clap::Args, Clone)]
pub struct RunArgs {
    /// The MCP endpoint, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    url: String,
    /// pairs (start + end), remember, focus-get, or the baseline's tools: echo
    /// (a 4-byte answer) and echo-focus (what focus-get answers, from memory).
    #[arg(long)]
    workload: String,
    /// Concurrent clients, comma-separated: one run each.
    #[arg(long, default_value = "1,8,64", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// Seconds per run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Sign agent tokens with this HS256 secret (issuer and audience `brain`).
    #[arg(long, env = "BRAIN_JWT_HS256_SECRET", default_value = "")]
    secret: String,
    /// Spread the workers over this many tenants (bench-0 … bench-N-1).
    #[arg(long, default_value_t = 1)]
    tenants: usize,
    /// All the workers of a tenant in one project, instead of one project
    /// each: their ends contend on one focus, and a pair's end may answer
    /// `conflict` (counted, not an error). The output line then counts how
    /// the server's closes went (`brain_closes_total` on its /metrics).
    #[arg(long)]
    shared_project: bool,
    /// The server's process id, to report its CPU per call (Linux /proc).
    #[arg(long)]
    server_pid: Option<u32>,
    /// A name for the output line.
    #[arg(long, default_value = "brain")]
    label: String,
}

/// One worker's MCP connection.
struct Conn {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: u64,
}

impl Conn {
    async fn rpc(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let body =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if !self.token.is_empty() {
            req = req.bearer_auth(&self.token);
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let resp = req.send().await?;
        if self.session.is_none()
            && let Some(s) = resp.headers().get("mcp-session-id")
        {
            self.session = Some(s.to_str()?.to_owned());
        }
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bail!(
                "{method}: HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            );
        }
        // An SSE answer: the JSON-RPC response is the data line that has an id.
        let found = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .or_else(|| serde_json::from_str(&text).ok())
            .context("no JSON-RPC answer")?;
        if let Some(e) = found.get("error") {
            bail!("{method}: {e}");
        }
        Ok(found["result"].clone())
    }

    /// End the MCP connection (DELETE), so repeated runs on one database
    /// stay under the server's per-tenant limit on open connections.
    async fn close(self) {
        let Some(session) = &self.session else {
            return;
        };
        let mut req = self
            .http
            .delete(&self.url)
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session);
        if !self.token.is_empty() {
            req = req.bearer_auth(&self.token);
        }
        let _ = req.send().await;
    }

    async fn notify(&mut self, method: &str) -> anyhow::Result<()> {
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&json!({"jsonrpc": "2.0", "method": method}));
        if !self.token.is_empty() {
            req = req.bearer_auth(&self.token);
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        req.send().await?.error_for_status()?;
        Ok(())
    }

    async fn tool(&mut self, name: &str, args: Value) -> anyhow::Result<Value> {
        let r = self
            .rpc("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        if r["isError"] == true {
            bail!("{name}: {}", r["structuredContent"]["error"]["code"]);
        }
        Ok(r["structuredContent"].clone())
    }
}

/// A 2 KB focus body, as pgbench's hot-write model updates: the same length
/// every time, so the shrink guard never refuses.
pub(crate) fn body(n: u64) -> String {
    let head = format!("revision body {n:012}\n");
    let mut b = head.clone();
    while b.len() < 2048 {
        b.push_str("carry the durable decisions forward; ");
    }
    b.truncate(2048);
    b
}

/// What one iteration did that the output line counts.
#[derive(Default)]
struct Did {
    conflicts: u64,
}

async fn one(conn: &mut Conn, workload: &str, project: &str, n: u64) -> anyhow::Result<Did> {
    let mut did = Did::default();
    match workload {
        "pairs" => {
            let s = conn
                .tool(
                    "brain_session_start",
                    json!({"project": project, "client_key": "bench"}),
                )
                .await?;
            let rev = s["briefing"]["base_focus"]["revision"]
                .as_i64()
                .unwrap_or(0);
            let end = conn
                .tool(
                    "brain_session_end",
                    json!({"session_id": s["session"]["session_id"], "expected_client_key": "bench",
                           "summary": "bench", "next_focus": body(n), "expected_focus_revision": rev}),
                )
                .await?;
            match end["focus_outcome"].as_str() {
                Some("applied") => {}
                // Another worker's end in the shared project moved the focus
                // (or wrote the same body: the workers' bodies repeat).
                Some("conflict" | "unchanged") => did.conflicts += 1,
                _ => bail!("end: {}", end["focus_outcome"]),
            }
        }
        "remember" => {
            conn.tool(
                "brain_remember",
                json!({"project": project, "kind": "note", "text": format!("observation {n}")}),
            )
            .await?;
        }
        "focus-get" => {
            conn.tool("brain_focus_get", json!({"project": project}))
                .await?;
        }
        "echo-focus" => {
            conn.tool("focus", json!({"project": project})).await?;
        }
        "echo" => {
            conn.rpc(
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "ping"}}),
            )
            .await?;
        }
        other => bail!("unknown workload {other}"),
    }
    Ok(did)
}

/// Process CPU (user + system) in seconds, from /proc/PID/stat (clock ticks
/// of 1/100 s, the Linux default).
fn cpu_secs(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The whole machine's busy CPU in seconds (every process: brain, PostgreSQL,
/// this load generator), from /proc/stat's first line: user, nice, system,
/// irq and softirq; not idle, iowait or steal (time the hypervisor gave to
/// other guests).
fn machine_busy_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let busy = [0, 1, 2, 5, 6]
        .iter()
        .map(|&i| f.get(i).copied())
        .sum::<Option<f64>>()?;
    Some(busy / 100.0)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    for &c in &args.concurrency {
        run_one(&args, c).await?;
    }
    Ok(())
}

/// Worker `w`'s MCP connection, initialized, on its tenant's token.
async fn connect(args: &RunArgs, http: &reqwest::Client, w: usize) -> anyhow::Result<Conn> {
    let tenant = format!("bench-{}", w % args.tenants.max(1));
    let token = if args.secret.is_empty() {
        String::new()
    } else {
        brain_server::token::mint(&brain_server::token::MintRequest {
            secret: &args.secret,
            issuer: "brain",
            audience: "brain",
            tenant: &tenant,
            subject: &format!("worker-{w}"),
            role: "agent",
            ttl_secs: 3600,
        })?
    };
    let mut conn = Conn {
        http: http.clone(),
        url: args.url.clone(),
        token,
        session: None,
        next_id: 0,
    };
    conn.rpc(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "brain-bench", "version": "1"}}),
    )
    .await
    .context("initialize")?;
    conn.notify("notifications/initialized").await?;
    Ok(conn)
}

async fn run_one(args: &RunArgs, c: usize) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(c.max(1) * 2)
        .tcp_nodelay(true)
        .build()?;
    let mut conns = Vec::new();
    for w in 0..c {
        conns.push(connect(args, &http, w).await?);
    }
    let closes0 = closes(&http, args).await;
    let cpu0 = args.server_pid.and_then(cpu_secs);
    let machine0 = machine_busy_secs();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let mut tasks = Vec::new();
    for (w, mut conn) in conns.into_iter().enumerate() {
        let workload = args.workload.clone();
        // One project per worker: concurrent ends contend on the tenant's
        // ledger tip, never on one focus revision (unless asked to share).
        let project = match args.shared_project {
            true => "bench-shared".to_owned(),
            false => format!("bench-w{w}"),
        };
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0u64;
            let mut conflicts = 0u64;
            let mut first_error = None;
            let mut n = 0u64;
            while Instant::now() < deadline {
                let t = Instant::now();
                match one(&mut conn, &workload, &project, n).await {
                    Ok(did) => {
                        lat.push(t.elapsed().as_micros() as u64);
                        conflicts += did.conflicts;
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert_with(|| e.to_string());
                    }
                }
                n += 1;
            }
            (lat, errors, conflicts, first_error, conn)
        }));
    }
    let mut lat = Vec::new();
    let mut errors = 0;
    let mut conflicts = 0;
    let mut first_error = None;
    let mut done = Vec::new();
    for t in tasks {
        let (l, e, k, f, conn) = t.await?;
        done.push(conn);
        lat.extend(l);
        errors += e;
        conflicts += k;
        if first_error.is_none() {
            first_error = f;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let spent = |a: Option<f64>, b: Option<f64>| Some(b? - a?);
    let cpu = spent(cpu0, args.server_pid.and_then(cpu_secs));
    let machine = spent(machine0, machine_busy_secs());
    // After the measurement: closing is not part of it.
    close_all(done).await;
    let closes = match (closes0, closes(&http, args).await) {
        (Some(a), Some(b)) => Some(
            b.into_iter()
                .map(|(way, n)| {
                    let before = a.get(&way).copied().unwrap_or(0.0);
                    (way, n - before)
                })
                .collect::<std::collections::BTreeMap<_, _>>(),
        ),
        _ => None,
    };
    lat.sort_unstable();
    let ops = lat.len() as f64 / elapsed;
    // A pair is two calls; CPU is per call.
    let calls = lat.len() as f64 * if args.workload == "pairs" { 2.0 } else { 1.0 };
    let cpu_per_call = cpu.map(|c| c * 1000.0 / calls.max(1.0));
    let machine_per_call = machine.map(|c| c * 1000.0 / calls.max(1.0));
    let round = |v: f64, places: i32| (v * 10f64.powi(places)).round() / 10f64.powi(places);
    // A shared project's runs are a workload of their own in the report.
    let workload_name = match args.shared_project {
        true => format!("{}-shared", args.workload),
        false => args.workload.clone(),
    };
    let line = json!({
        "label": args.label, "workload": workload_name, "tenants": args.tenants, "c": c,
        "ops": lat.len(), "ops_per_sec": round(ops, 1),
        "p50_ms": round(percentile(&lat, 0.5), 2), "p99_ms": round(percentile(&lat, 0.99), 2),
        "errors": errors, "conflicts": conflicts, "shared_project": args.shared_project,
        "closes": closes,
        "server_cpu_ms_per_call": cpu_per_call.map(|v| round(v, 3)),
        "machine_cpu_ms_per_call": machine_per_call.map(|v| round(v, 3)),
    });
    println!("{line}");
    if let Some(e) = first_error {
        eprintln!("first error ({}, c={c}): {e}", args.label);
    }
    Ok(())
}

/// The server's closes by way (`brain_closes_total{way}` on its /metrics,
/// beside the MCP endpoint); `None` when the shared-project count is not
/// asked for or the server does not answer it.
async fn closes(
    http: &reqwest::Client,
    args: &RunArgs,
) -> Option<std::collections::BTreeMap<String, f64>> {
    if !args.shared_project {
        return None;
    }
    let url = args.url.strip_suffix("/mcp")?.to_owned() + "/metrics";
    let text = http.get(url).send().await.ok()?.text().await.ok()?;
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("brain_closes_total{way=\"") else {
            continue;
        };
        let (way, rest) = rest.split_once('"')?;
        let n: f64 = rest.rsplit(' ').next()?.parse().ok()?;
        out.insert(way.to_owned(), n);
    }
    Some(out)
}

/// End every connection, at once.
async fn close_all(conns: Vec<Conn>) {
    let closing: Vec<_> = conns.into_iter().map(|c| tokio::spawn(c.close())).collect();
    for c in closing {
        let _ = c.await;
    }
}

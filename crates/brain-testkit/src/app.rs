//! `spawn_app()`: the real front door on 127.0.0.1:0 over a fresh PostgreSQL
//! database, with helpers to mint tokens and talk MCP through rmcp's client.

use std::sync::Arc;
use std::time::Duration;

use brain_core::store::{Store, StoreSettings};
use brain_server::auth::Authenticator;
use brain_server::config::{JwtConfig, Secret};
use brain_server::http::limits::{LimitSettings, Limits};
use brain_server::http::{AppState, HttpOptions, router};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{TestDb, TestSqlite};

pub const SECRET: &str = "test-secret-test-secret-test-secret-0123456789";
pub const ISSUER: &str = "brain";
pub const AUDIENCE: &str = "brain";

/// The database behind a test app: PostgreSQL by default, SQLite when
/// `BRAIN_TEST_STORE=sqlite`, so every black-box test runs on both stores.
pub enum TestBackend {
    Postgres(TestDb),
    Sqlite(TestSqlite),
}

impl TestBackend {
    pub async fn create() -> Self {
        match std::env::var("BRAIN_TEST_STORE").as_deref() {
            Ok("sqlite") => Self::Sqlite(TestSqlite::new()),
            Ok("postgres") | Err(_) => {
                Self::Postgres(TestDb::create().await.expect("test database"))
            }
            Ok(other) => panic!("BRAIN_TEST_STORE must be postgres or sqlite, not {other}"),
        }
    }

    pub fn url(&self) -> &str {
        match self {
            Self::Postgres(db) => &db.url,
            Self::Sqlite(f) => &f.url,
        }
    }

    /// Open the store through the same selection the server uses.
    pub async fn open(&self) -> Arc<dyn Store> {
        brain_server::serve::open_store(self.url(), StoreSettings::default())
            .await
            .expect("open store")
    }
}

pub struct TestApp {
    pub addr: std::net::SocketAddr,
    pub store: Arc<dyn Store>,
    pub db: TestBackend,
    shutdown: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub fn jwt_config() -> JwtConfig {
    JwtConfig {
        hs256_secret: Some(Secret::new(SECRET)),
        public_keys: None,
        issuer: ISSUER.into(),
        audience: AUDIENCE.into(),
        claims: Default::default(),
        jwks: Default::default(),
    }
}

/// Start the real server with the given JWT settings on a fresh database.
pub async fn spawn_app_with(jwt: JwtConfig) -> TestApp {
    spawn_app_limited(jwt, LimitSettings::default()).await
}

/// What a test may change about the server it starts.
#[derive(Debug, Clone, Copy)]
pub struct TestOptions {
    pub limits: LimitSettings,
    /// `BRAIN_CONNECTION_IDLE_SECS`.
    pub connection_idle_secs: u64,
    /// `BRAIN_TOOL_PROFILES`.
    pub profiles: brain_server::profiles::Profiles,
    /// What the front door allows each socket.
    pub sockets: brain_server::serve::SocketLimits,
    /// Run on PostgreSQL whatever `BRAIN_TEST_STORE` says: for a test of
    /// PostgreSQL's own resources (its pool), which SQLite does not have.
    pub postgres: bool,
}

impl Default for TestOptions {
    fn default() -> Self {
        Self {
            limits: LimitSettings::default(),
            connection_idle_secs: 600,
            profiles: Default::default(),
            sockets: Default::default(),
            postgres: false,
        }
    }
}

/// Start the real server with the given JWT settings and per-credential limits.
pub async fn spawn_app_limited(jwt: JwtConfig, limits: LimitSettings) -> TestApp {
    spawn_app_opts(
        jwt,
        TestOptions {
            limits,
            ..TestOptions::default()
        },
    )
    .await
}

/// Start the real server with the given JWT settings and options.
pub async fn spawn_app_opts(jwt: JwtConfig, opts: TestOptions) -> TestApp {
    let limits = opts.limits;
    let db = if opts.postgres {
        TestBackend::Postgres(TestDb::create().await.expect("test database"))
    } else {
        TestBackend::create().await
    };
    let settings = StoreSettings {
        connection_idle_secs: i64::try_from(opts.connection_idle_secs).unwrap_or(i64::MAX),
        // As `brain serve` runs.
        remember_focus: true,
        ..StoreSettings::default()
    };
    let store = brain_server::serve::open_store(db.url(), settings)
        .await
        .expect("open store");
    // Bind first, then spawn: the address is known and accepting before any request.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = CancellationToken::new();
    let auth = Authenticator::from_config(&jwt).expect("auth config");
    auth.start(shutdown.clone()).await;
    let state = AppState::from(brain_server::http::AppParts {
        store: store.clone(),
        auth: Arc::new(auth),
        public_url: format!("http://{addr}"),
        allowed_hosts: Arc::new(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]),
        allowed_origins: Arc::new(vec![
            "http://localhost:*".into(),
            "http://127.0.0.1:*".into(),
        ]),
        init_params: brain_server::http::InitParams::new(Duration::from_secs(
            opts.connection_idle_secs,
        )),
        elevation_max_secs: 3600,
        admin_limiter: brain_server::http::admin_limiter(),
        limits: Limits::new(limits),
        probes: Default::default(),
    });
    let app = router(
        state,
        HttpOptions {
            connection_idle: Duration::from_secs(opts.connection_idle_secs),
            shutdown: shutdown.clone(),
            metrics: true,
            profiles: opts.profiles,
        },
    );
    tokio::spawn(brain_server::serve::serve(
        listener,
        app,
        shutdown.clone(),
        opts.sockets,
    ));
    TestApp {
        addr,
        store,
        db,
        shutdown,
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(jwt_config()).await
}

/// An HS256 token with the standard claims, overridden or removed by `patch`
/// (a `null` value removes the claim).
pub fn token_with(patch: Value) -> String {
    token_signed(patch, SECRET)
}

pub fn token_signed(patch: Value, secret: &str) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "agent-1", "tenant": "acme",
        "iat": now, "nbf": now, "exp": now + 3600,
        "jti": uuid::Uuid::new_v4().simple().to_string(),
    });
    if let (Some(c), Some(p)) = (claims.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            if v.is_null() {
                c.remove(k);
            } else {
                c.insert(k.clone(), v.clone());
            }
        }
    }
    let key = EncodingKey::from_secret(secret.as_bytes()).expect("key");
    encode(&Header::new(Algorithm::HS256), &claims, &key).expect("sign")
}

pub fn token(tenant: &str, sub: &str) -> String {
    token_with(json!({"tenant": tenant, "sub": sub}))
}

pub type Client = RunningService<rmcp::RoleClient, ()>;

impl TestApp {
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// An initialized MCP client (rmcp's own) holding `token`.
    pub async fn client(&self, token: &str) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.mcp_url()).auth_header(token),
        );
        ().serve(transport).await.expect("initialize")
    }
}

/// Call a tool; the result as the server sent it.
pub async fn call(
    client: &rmcp::Peer<rmcp::RoleClient>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .expect("tools/call")
}

/// A successful call's structured result (panics on a tool error).
pub async fn ok(client: &rmcp::Peer<rmcp::RoleClient>, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args).await;
    assert_ne!(
        r.is_error,
        Some(true),
        "{tool} failed: {:?}",
        r.structured_content
    );
    r.structured_content.expect("structured content")
}

/// A refused call's error object `{code, message, status, details}` (panics on success).
pub async fn refused(client: &rmcp::Peer<rmcp::RoleClient>, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args).await;
    assert_eq!(
        r.is_error,
        Some(true),
        "{tool} should fail: {:?}",
        r.structured_content
    );
    let text = r
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default();
    let err = r.structured_content.expect("structured error")["error"].clone();
    let code = err["code"].as_str().unwrap_or_default().to_owned();
    assert!(
        text.starts_with(&format!("{code}: ")),
        "text block must start with the code: {text}"
    );
    err
}

/// A file under brain-testkit's `fixtures/` (test-only keys).
pub fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Count rows of a table in the app's database (to prove nothing was written).
pub async fn count_rows(app: &TestApp, table: &str) -> i64 {
    let sql = format!("SELECT count(*) FROM {table}");
    match &app.db {
        TestBackend::Postgres(db) => {
            let pool = sqlx::PgPool::connect(&db.inspect_url)
                .await
                .expect("connect");
            let n = sqlx::query_scalar(&sql)
                .fetch_one(&pool)
                .await
                .expect("count");
            pool.close().await;
            n
        }
        TestBackend::Sqlite(f) => {
            let pool = sqlx::SqlitePool::connect(&f.url).await.expect("connect");
            let n = sqlx::query_scalar(&sql)
                .fetch_one(&pool)
                .await
                .expect("count");
            pool.close().await;
            n
        }
    }
}

/// Run a migration file of the repository (`postgres/0040_….sql` or
/// `sqlite/0031_….sql`, under `migrations/`) on the app's database as
/// shipped, in one transaction, as `brain migrate` runs it: to show what it
/// does to rows written the way an older build wrote them.
pub async fn run_migration(app: &TestApp, file: &str) {
    let path = format!("{}/../../migrations/{file}", env!("CARGO_MANIFEST_DIR"));
    let sql = std::fs::read_to_string(&path).expect("read the migration");
    match &app.db {
        TestBackend::Postgres(db) => {
            let pool = sqlx::PgPool::connect(&db.inspect_url)
                .await
                .expect("connect");
            let mut tx = pool.begin().await.expect("begin");
            sqlx::raw_sql(&sql)
                .execute(&mut *tx)
                .await
                .expect("migrate");
            tx.commit().await.expect("commit");
            pool.close().await;
        }
        TestBackend::Sqlite(f) => {
            let pool = sqlx::SqlitePool::connect(&f.url).await.expect("connect");
            let mut tx = pool.begin().await.expect("begin");
            sqlx::raw_sql(&sql)
                .execute(&mut *tx)
                .await
                .expect("migrate");
            tx.commit().await.expect("commit");
            pool.close().await;
        }
    }
}

/// Run one statement on the app's database (to age an elevation, say).
pub async fn exec(app: &TestApp, sql: &str) {
    match &app.db {
        TestBackend::Postgres(db) => {
            let pool = sqlx::PgPool::connect(&db.inspect_url)
                .await
                .expect("connect");
            sqlx::query(sql).execute(&pool).await.expect("exec");
            pool.close().await;
        }
        TestBackend::Sqlite(f) => {
            let pool = sqlx::SqlitePool::connect(&f.url).await.expect("connect");
            sqlx::query(sql).execute(&pool).await.expect("exec");
            pool.close().await;
        }
    }
}

/// The newest MCP connection opened by `credential_id` (e.g. `brain|op`).
pub async fn latest_connection(app: &TestApp, credential_id: &str) -> String {
    let sql = "SELECT connection_id FROM mcp_connections WHERE credential_id = $1 ORDER BY opened_at DESC LIMIT 1";
    match &app.db {
        TestBackend::Postgres(db) => {
            let pool = sqlx::PgPool::connect(&db.inspect_url)
                .await
                .expect("connect");
            let id = sqlx::query_scalar(sql)
                .bind(credential_id)
                .fetch_one(&pool)
                .await
                .expect("connection");
            pool.close().await;
            id
        }
        TestBackend::Sqlite(f) => {
            let pool = sqlx::SqlitePool::connect(&f.url).await.expect("connect");
            let id = sqlx::query_scalar(&sql.replace("$1", "?1"))
                .bind(credential_id)
                .fetch_one(&pool)
                .await
                .expect("connection");
            pool.close().await;
            id
        }
    }
}

/// One JSON-RPC request over raw HTTP on an existing connection; the `result`
/// (or `error`) of the response, whether it came as JSON or as an SSE event.
pub async fn raw_rpc(
    base: &str,
    token: &str,
    connection: &str,
    method: &str,
    params: Value,
) -> (u16, Value) {
    // Ids must be unique among a connection's in-flight requests.
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", connection)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .expect("send");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    let message = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .find_map(|d| serde_json::from_str::<Value>(d).ok())
        .or_else(|| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null);
    (status, message)
}

/// A raw initialize (and `initialized` notification) at `base`; the connection id.
pub async fn raw_connect(base: &str, token: &str) -> String {
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let resp = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("initialize");
    assert_eq!(resp.status().as_u16(), 200, "initialize");
    let id = resp.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let _ = resp.text().await;
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let resp = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&note)
        .send()
        .await
        .expect("initialized");
    assert_eq!(resp.status().as_u16(), 202);
    id
}

/// `tools/call` over raw HTTP; the tool result's structured content and isError.
pub async fn raw_tool(
    base: &str,
    token: &str,
    connection: &str,
    tool: &str,
    args: Value,
) -> (Value, bool) {
    let (status, msg) = raw_rpc(
        base,
        token,
        connection,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )
    .await;
    assert_eq!(status, 200, "{msg}");
    let result = &msg["result"];
    (
        result["structuredContent"].clone(),
        result["isError"] == json!(true),
    )
}

/// A client that reports every `notifications/resources/updated` URI it hears.
pub struct Watcher(tokio::sync::mpsc::UnboundedSender<String>);

impl rmcp::ClientHandler for Watcher {
    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

pub type WatchingClient = RunningService<rmcp::RoleClient, Watcher>;

/// An initialized rmcp client on `mcp_url` whose resource updates arrive on the receiver.
pub async fn watching_client(
    mcp_url: &str,
    token: &str,
) -> (WatchingClient, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(mcp_url.to_owned()).auth_header(token),
    );
    (Watcher(tx).serve(transport).await.expect("initialize"), rx)
}

/// The real `brain` binary serving on `db` with extra environment (and
/// `RUST_LOG` unset unless `env` sets it), its stderr kept as `log`.
pub struct ServerProcess {
    pub base: String,
    pub child: tokio::process::Child,
    pub log: Arc<std::sync::Mutex<String>>,
}

impl ServerProcess {
    /// `bin` is the test's `env!("CARGO_BIN_EXE_brain")`.
    pub async fn start(bin: &str, db: &TestBackend, env: &[(&str, &str)]) -> Self {
        use tokio::io::AsyncBufReadExt;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .env("BRAIN_JWT_HS256_SECRET", SECRET)
            .env("DATABASE_URL", db.url())
            .env_remove("RUST_LOG")
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(std::sync::Mutex::new(String::new()));
        let addr = loop {
            let line = lines.next_line().await.unwrap().expect("exited early");
            log.lock().unwrap().push_str(&line);
            if let Some(rest) = line.split("addr=").nth(1) {
                break rest.split_whitespace().next().unwrap().to_owned();
            }
        };
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        Self {
            base: format!("http://{addr}"),
            child,
            log,
        }
    }

    /// The log once it holds `needle` (it is read from the server's stderr
    /// as the server writes it); panics after ten seconds without it.
    pub async fn wait_for_log(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let log = self.log.lock().unwrap().clone();
            if log.contains(needle) {
                return log;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the log never held {needle:?}: {log}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// The bytes logged so far.
    pub fn log_len(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    /// An initialized MCP client (rmcp's own) holding `token`.
    pub async fn client(&self, token: &str) -> Client {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", self.base))
                .auth_header(token),
        );
        ().serve(transport).await.expect("initialize")
    }
}

//! The `brain` binary's run contract (SPEC §7).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use brain_testkit::TestDb;
use brain_testkit::app::SECRET;

fn brain() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_brain"));
    for var in [
        "BRAIN_JWT_HS256_SECRET",
        "BRAIN_JWT_PUBLIC_KEYS",
        "DATABASE_URL",
        "BRAIN_LISTEN",
    ] {
        c.env_remove(var);
    }
    c
}

#[test]
fn serve_refuses_to_start_without_a_key() {
    let file = brain_testkit::TestSqlite::new();
    let out = brain()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &file.url,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BRAIN_JWT_HS256_SECRET"), "{err}");
    assert!(!file.path.exists(), "refusing must not create the database");
}

/// Shared tokens from the CLI: shown once, listed without their secret, revocable;
/// a live one lets `brain serve` start with no JWT key at all.
#[test]
fn shared_tokens_from_the_cli() {
    let file = brain_testkit::TestSqlite::new();
    let run = |args: &[&str]| {
        let out = brain()
            .args(args)
            .args(["--database-url", &file.url])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let secret = run(&[
        "token", "shared", "create", "--tenant", "acme", "--name", "bots",
    ]);
    let secret = secret.trim();
    assert!(secret.starts_with("brain_st_"));
    let listed = run(&["token", "shared", "list", "--tenant", "acme"]);
    assert!(listed.contains("bots") && listed.contains("live") && !listed.contains(secret));
    // With a live shared token and no JWT key, serve starts (and is stopped here).
    let mut child = brain()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &file.url,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stderr.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert!(first.contains("listening"), "{first}");
    child.kill().unwrap();
    child.wait().unwrap();
    run(&[
        "token", "shared", "revoke", "--tenant", "acme", "--name", "bots",
    ]);
    assert!(run(&["token", "shared", "list", "--tenant", "acme"]).contains("revoked"));
}

#[test]
fn serve_exits_non_zero_when_the_database_is_unreachable() {
    let out = brain()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
}

/// brain's writes are made for READ COMMITTED: a database that gives its
/// transactions another level is refused at start, with the level named.
#[tokio::test]
async fn serve_refuses_a_database_at_another_isolation_level() {
    let db = TestDb::create().await.unwrap();
    let pool = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&pool)
        .await
        .unwrap();
    sqlx::query(&format!(
        "ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'repeatable read'"
    ))
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let mut serve = tokio::process::Command::from(brain());
    serve
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &db.url,
        ])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .kill_on_drop(true);
    // A server that did not refuse would serve until killed.
    let out = tokio::time::timeout(std::time::Duration::from_secs(30), serve.output())
        .await
        .expect("brain serve refuses to start; it does not serve")
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"repeatable read\"") && err.contains("read committed"),
        "{err}"
    );
}

#[tokio::test]
async fn token_mint_prints_a_token_the_server_accepts() {
    let out = brain()
        .args([
            "token", "mint", "--tenant", "acme", "--sub", "alice", "--role", "operator",
        ])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap();
    let auth =
        brain_server::auth::Authenticator::from_config(&brain_testkit::app::jwt_config()).unwrap();
    let p = auth.authenticate(token.trim()).await.unwrap();
    assert_eq!(p.tenant.as_str(), "acme");
    assert_eq!(p.subject, "alice");
    assert_eq!(p.role, brain_core::model::Role::Operator);
}

#[tokio::test]
async fn migrate_applies_the_schema() {
    let db = TestDb::create().await.unwrap();
    let out = brain()
        .args(["migrate", "--database-url", &db.url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pool = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, brain_store_postgres::MIGRATOR.iter().count() as i64);
    // Idempotent.
    let again = brain()
        .args(["migrate", "--database-url", &db.url])
        .output()
        .unwrap();
    assert!(again.status.success());
    pool.close().await;
}

/// `brain serve --dev` with nothing configured: SQLite in the working folder, a
/// secret kept beside it, and a client configuration whose token works.
#[tokio::test]
async fn serve_dev_starts_with_nothing_configured() {
    use std::io::{BufRead, BufReader};

    let dir = std::env::temp_dir().join(format!("brain-dev-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let start = || {
        let dir = dir.clone();
        async move {
            let mut child = brain()
                .args(["serve", "--dev", "--listen", "127.0.0.1:0"])
                .current_dir(&dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let stdout = child.stdout.take().unwrap();
            let text = tokio::task::spawn_blocking(move || {
                let mut lines = Vec::new();
                for line in BufReader::new(stdout).lines() {
                    let line = line.unwrap();
                    let done = line == "}";
                    lines.push(line);
                    if done {
                        break;
                    }
                }
                lines
            })
            .await
            .unwrap();
            // stdout is the JSON alone: the words around it go to stderr.
            let json: serde_json::Value = serde_json::from_str(&text.join("\n")).unwrap();
            let server = &json["mcpServers"]["brain"];
            let url = server["url"].as_str().unwrap().to_owned();
            let auth = server["headers"]["Authorization"].as_str().unwrap();
            (child, url, auth.strip_prefix("Bearer ").unwrap().to_owned())
        }
    };
    let (mut first, _, first_token) = start().await;
    first.kill().unwrap();
    first.wait().unwrap();
    // A restart prints the same credential: an agent's shared token, which
    // does not expire (the JWT it printed before lasted 7 days).
    let (mut child, url, token) = start().await;
    assert_eq!(token, first_token);
    assert!(token.starts_with("brain_st_"), "{token}");
    assert!(dir.join("brain.db").exists() && dir.join("brain.db.secret").exists());
    assert!(dir.join("brain.db.secret.agent-token").exists());
    // A real MCP client starts and ends a session with what was printed.
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(url)
            .auth_header(token),
    );
    let client = rmcp::ServiceExt::serve((), transport).await.unwrap();
    let started = brain_testkit::app::ok(
        &client,
        "brain_session_start",
        serde_json::json!({"project": "hello", "client_key": "me"}),
    )
    .await;
    let ended = brain_testkit::app::ok(
        &client,
        "brain_session_end",
        serde_json::json!({
        "session_id": started["session"]["session_id"], "expected_client_key": "me",
        "summary": "first run", "next_focus": "keep going", "expected_focus_revision": 0}),
    )
    .await;
    assert_eq!(ended["focus_outcome"], serde_json::json!("applied"));
    client.cancel().await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn healthcheck_reports_readiness() {
    let app = brain_testkit::app::spawn_app().await;
    let url = app.url("/readyz");
    let ok = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["healthcheck", "--url", &url])
        .status()
        .await
        .unwrap();
    assert!(ok.success());
    let down = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["healthcheck", "--url", "http://127.0.0.1:1/readyz"])
        .stderr(std::process::Stdio::null())
        .status()
        .await
        .unwrap();
    assert!(!down.success());
}

/// Operator mistakes get one clear line each, and never a change to the wrong place.
#[tokio::test]
async fn cli_errors_say_what_is_wrong_once() {
    let run = |args: &[&str]| {
        let out = brain().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8(out.stderr).unwrap()
    };
    // An unknown tenant is an error, not an empty clean chain.
    let file = brain_testkit::TestSqlite::new();
    let err = run(&[
        "receipts",
        "verify",
        "--tenant",
        "nosuch",
        "--database-url",
        &file.url,
    ]);
    assert!(err.contains("no tenant nosuch"), "{err}");
    assert_eq!(err.lines().count(), 1, "printed once: {err}");
    // An unreachable PostgreSQL is named, with the cause.
    let err = run(&[
        "migrate",
        "--database-url",
        "postgres://brain@127.0.0.1:1/brain",
    ]);
    assert!(
        err.contains("127.0.0.1:1/brain") && err.contains("refused"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "printed once: {err}");
    // The maintenance database never receives brain's schema.
    let admin = brain_testkit::db::admin_url();
    let maintenance = format!("{}/postgres", admin.rsplit_once('/').unwrap().0);
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&maintenance)
        .await
        .unwrap();
    let tables = "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'";
    let before: i64 = sqlx::query_scalar(tables)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let err = run(&["migrate", "--database-url", &maintenance]);
    assert!(err.contains("maintenance database"), "{err}");
    let after: i64 = sqlx::query_scalar(tables)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(before, after, "nothing was created in {maintenance}");
    // A token is never minted with a secret serve would refuse.
    let err = run(&[
        "token",
        "mint",
        "--tenant",
        "t",
        "--sub",
        "s",
        "--jwt-hs256-secret",
        "short",
    ]);
    assert!(err.contains("at least 32 bytes"), "{err}");
}

#[test]
fn serve_refuses_an_unknown_tool_profile() {
    let file = brain_testkit::TestSqlite::new();
    let out = brain()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            &file.url,
        ])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .env("BRAIN_TOOL_PROFILES", "brain,brian")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown profile \"brian\"") && err.contains("brain-core"),
        "{err}"
    );
    assert!(!file.path.exists(), "refusing must not create the database");
}

/// A one-shot command prints its answer, not the warnings a server gives its
/// operator at start (here: the role is a superuser, so row-level security
/// does not bind it), which `receipts verify` printed on every run.
#[tokio::test]
async fn one_shot_commands_print_no_server_warnings() {
    let db = TestDb::create().await.unwrap();
    let migrated = brain()
        .args(["migrate", "--database-url", &db.url])
        .output()
        .unwrap();
    assert!(migrated.status.success());
    let pool = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    sqlx::query("INSERT INTO tenants (tenant_id) VALUES ('acme')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let out = brain()
        .args(["receipts", "verify", "--tenant", "acme"])
        .env("DATABASE_URL", &db.inspect_url)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("WARN") && !err.contains("row-level security"),
        "{err}"
    );
    // A server started the same way says it.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("BRAIN_JWT_HS256_SECRET", SECRET)
        .env("DATABASE_URL", &db.inspect_url)
        .env_remove("RUST_LOG")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stderr.take().unwrap()));
    let mut warned = false;
    while let Ok(Some(line)) = lines.next_line().await {
        warned |= line.contains("row-level security");
        if line.contains("addr=") {
            break;
        }
    }
    assert!(
        warned,
        "serve warns of a role that bypasses row-level security"
    );
}

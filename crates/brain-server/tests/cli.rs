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
    let out = brain()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("BRAIN_JWT_HS256_SECRET"), "{err}");
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

#[test]
fn token_mint_prints_a_token_the_server_accepts() {
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
    let p = auth.authenticate(token.trim()).unwrap();
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
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(n, 1);
    // Idempotent.
    let again = brain()
        .args(["migrate", "--database-url", &db.url])
        .output()
        .unwrap();
    assert!(again.status.success());
    pool.close().await;
}

//! `brain receipts verify` finds any edited, deleted or reordered receipt,
//! tampered with directly in PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::store::StoreSettings;
use brain_store_postgres::PgStore;
use brain_testkit::TestDb;
use brain_testkit::story::{agent, end_req, start};

/// A fresh database with 6 receipts in tenant `acme`.
async fn ledger() -> TestDb {
    let db = TestDb::create().await.unwrap();
    let store = PgStore::connect(&db.url, StoreSettings::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let c = agent("acme");
    for i in 0..3 {
        let s = start(&store, &c, "p", &format!("k{i}"), None).await.session;
        let _ = brain_core::writes::SessionWrites::end_session(
            &store,
            &c,
            end_req(s.session_id, &format!("k{i}"), "focus", i),
        )
        .await;
    }
    store.pool().close().await;
    db
}

async fn tamper(db: &TestDb, sql: &str) {
    let pool = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    pool.close().await;
}

fn verify(db: &TestDb) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args([
            "receipts",
            "verify",
            "--tenant",
            "acme",
            "--database-url",
            &db.url,
        ])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).trim().to_owned(),
    )
}

#[tokio::test]
async fn an_intact_chain_verifies_with_its_count_and_tip() {
    let db = ledger().await;
    let (ok, out) = verify(&db);
    assert!(ok, "{out}");
    assert!(
        out.starts_with("OK tenant=acme receipts=6 tip_seq=6 tip="),
        "{out}"
    );
}

#[tokio::test]
async fn every_kind_of_tampering_is_found() {
    let cases = [
        (
            "edited field",
            "UPDATE receipts SET outcome = 'forged' WHERE seq = 2",
            "seq=2 reason=hash_mismatch",
        ),
        (
            "deleted receipt",
            "DELETE FROM receipts WHERE seq = 3",
            "seq=4 reason=seq_gap",
        ),
        (
            "reordered receipts",
            "UPDATE receipts SET seq = -2 WHERE seq = 2; UPDATE receipts SET seq = 2 WHERE seq = 3; \
             UPDATE receipts SET seq = 3 WHERE seq = -2",
            "seq=2 reason=prev_hash_mismatch",
        ),
        (
            "deleted newest receipt",
            "DELETE FROM receipts WHERE seq = 6",
            "seq=6 reason=seq_gap",
        ),
        (
            "tip wound back",
            "UPDATE receipt_heads SET seq = 5, \
             hash = (SELECT hash FROM receipts WHERE tenant_id = 'acme' AND seq = 5)",
            "seq=6 reason=seq_gap",
        ),
        (
            "tip deleted",
            "DELETE FROM receipt_heads",
            "seq=1 reason=seq_gap",
        ),
        (
            "edited and rehashed",
            "UPDATE receipts SET outcome = 'forged', hash = repeat('0', 64) WHERE seq = 4",
            "seq=4 reason=hash_mismatch",
        ),
    ];
    for (name, sql, want) in cases {
        let db = ledger().await;
        tamper(&db, sql).await;
        let (ok, out) = verify(&db);
        assert!(!ok, "{name}: must exit non-zero");
        assert_eq!(out, format!("BAD tenant=acme {want}"), "{name}");
    }
}

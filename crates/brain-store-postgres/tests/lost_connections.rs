//! A restart, a failover or an operator's pg_terminate_backend kills every
//! pooled connection at once, and brain does not ping before each use
//! (issue 11). Writes and reads after such a break still succeed: the
//! transaction that meets a dead connection begins again on another, and
//! connections that sat idle across the break are pinged before use.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller};

use std::time::Duration;

use brain_core::error::StoreError;
use brain_core::flow::{WriteTx, draft};
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::ArtifactKind;
use brain_core::writes::{Backend, SessionWrites};
use brain_store_postgres::PgStore;
use sqlx::Connection;

async fn remember(store: &PgStore, text: &str) -> Result<(), StoreError> {
    let acme = TenantId::parse("acme").unwrap();
    let project = ProjectKey::parse("atlas").unwrap();
    let a = artifact(&project, ArtifactKind::Note, text);
    let mut tx = store.write(&acme).await?;
    let d = draft("brain_remember", Some(&project), None, "r", Ok(()));
    tx.remember(&caller(&acme), &a, d).await?;
    tx.commit(None).await
}

async fn read(store: &PgStore) -> Result<i64, StoreError> {
    let acme = TenantId::parse("acme").unwrap();
    let mut tx = store.scoped(&acme).await?;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&mut *tx)
        .await
        .map_err(StoreError::backend)?;
    tx.commit().await.map_err(StoreError::backend)?;
    Ok(n)
}

/// Every backend of the database but the caller's, ended as an operator
/// (or a restart) would; returns once they are gone.
async fn kill_backends(admin: &mut sqlx::PgConnection) -> i64 {
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_one(&mut *admin)
    .await
    .unwrap();
    for _ in 0..100 {
        let left: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut *admin)
        .await
        .unwrap();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    killed
}

#[tokio::test]
async fn after_every_connection_was_killed_one_call_fails_at_most() {
    let (db, store) = common::small_store(4).await;
    let mut admin = sqlx::PgConnection::connect(&db.inspect_url).await.unwrap();
    let acme = TenantId::parse("acme").unwrap();
    let mut written = 0;

    // The first call after the break meets a dead connection: a read in
    // round 0, a write in round 1. A read, or a write's BEGIN, begins again
    // on another connection; a write sent whole in one statement
    // (brain_remember into a known project) cannot know whether it ran, so
    // it fails, and it is the only call that may.
    for round in 0..2 {
        // Fill the pool: writes keep their connections (warm.rs), reads
        // hold others at the same time.
        remember(&store, "first").await.unwrap();
        let held = tokio::join!(
            store.scoped(&acme),
            store.scoped(&acme),
            store.scoped(&acme)
        );
        drop(held);
        remember(&store, "second").await.unwrap();
        written += 2;
        let killed = kill_backends(&mut admin).await;
        assert!(killed >= 2, "round {round}: {killed} backends ended");

        let mut failed = Vec::new();
        if round == 0 {
            match read(&store).await {
                Ok(n) => assert_eq!(n, written),
                Err(e) => failed.push(format!("the first read: {e}")),
            }
        }
        for i in 0..4 {
            match remember(&store, &format!("after {i}")).await {
                Ok(()) => written += 1,
                Err(e) => failed.push(format!("write {i}: {e}")),
            }
        }
        for i in 0..4 {
            match read(&store).await {
                Ok(n) => assert_eq!(n, written, "round {round}: read {i}"),
                Err(e) => failed.push(format!("read {i}: {e}")),
            }
        }
        assert!(
            failed.len() <= 1,
            "round {round}: {} calls failed: {failed:?}",
            failed.len()
        );
        if round == 0 {
            assert!(failed.is_empty(), "a read begins again: {failed:?}");
        }
    }

    // The first call after the break is an end: its read without locks
    // meets a dead connection and leaves the end to the locked way, whose
    // BEGIN travels with its session lock (link.rs) and begins again on
    // another connection, and nothing fails.
    let c = brain_testkit::story::agent("acme");
    let s = brain_testkit::story::start(&store, &c, "atlas", "k", None)
        .await
        .session;
    remember(&store, "before the end").await.unwrap();
    let killed = kill_backends(&mut admin).await;
    assert!(killed >= 1, "{killed} backends ended");
    let end = brain_testkit::story::end_req(s.session_id, "k", "the next focus", 0);
    SessionWrites::end_session(&store, &c, end)
        .await
        .unwrap_or_else(|e| panic!("the end after the break: {e}"));
    assert_eq!(read(&store).await.expect("a read after it"), written + 1);
}

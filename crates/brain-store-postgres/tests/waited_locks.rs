//! A locking read that waited for a close reads the body that close wrote.
//! A close names the body's revision in the focus row and writes the body as
//! a history row; under READ COMMITTED a `FOR UPDATE` read that waits sees
//! the locked row as its holder committed it, but other tables as of its own
//! start. So brain's locking reads lock in one statement and read in the
//! next; this holds `brain_lock_focus` to it (`brain_lock_close` and
//! `brain_lock_session` are written the same way; merging_ends' twenty racing
//! merges meet `brain_lock_close`'s case).
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use brain_core::ids::{ProjectKey, TenantId};
use sqlx::{Connection, PgConnection};

#[tokio::test]
async fn a_lock_that_waited_reads_the_body_its_holder_wrote() {
    let (db, _store) = common::store().await;
    let tenant = TenantId::parse("acme").unwrap();
    let project = ProjectKey::parse("atlas").unwrap();
    let mut holder = common::admin_with_project(&db, &tenant, &project).await;
    let mut watcher = PgConnection::connect(&db.inspect_url).await.unwrap();

    // The holder locks the base focus and writes revision 1 as a close does.
    let mut tx = holder.begin().await.unwrap();
    let rows = sqlx::query("SELECT * FROM brain_lock_focus('acme', 'atlas', '')")
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    sqlx::query(
        "UPDATE focus_bodies SET body = NULL, revision = 1 \
         WHERE tenant_id = 'acme' AND project = 'atlas' AND slot = ''",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id, \
         receipt_seq, created_at) VALUES ('acme', 'atlas', '', 1, 'written by the holder', \
         gen_random_uuid(), 1, now())",
    )
    .execute(&mut *tx)
    .await
    .unwrap();

    // Another transaction asks for the same lock, and waits.
    let url = db.inspect_url.clone();
    let waiting = tokio::spawn(async move {
        let mut c = PgConnection::connect(&url).await.unwrap();
        let mut tx = c.begin().await.unwrap();
        let got: (Option<String>, i64) =
            sqlx::query_as("SELECT body, revision FROM brain_lock_focus('acme', 'atlas', '')")
                .fetch_one(&mut *tx)
                .await
                .unwrap();
        tx.rollback().await.unwrap();
        got
    });
    let mut waited = false;
    for _ in 0..200 {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND query LIKE '%brain_lock_focus%'",
        )
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if n > 0 {
            waited = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(waited, "the second lock never waited");
    tx.commit().await.unwrap();

    let got = waiting.await.unwrap();
    assert_eq!(got, (Some("written by the holder".to_owned()), 1));
}

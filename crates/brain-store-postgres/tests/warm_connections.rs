//! Write connections kept between writes (src/warm.rs): they never hold a
//! connection a read needs for longer than a moment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller};

use std::time::Duration;

use brain_core::flow::{WriteTx, draft};
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::ArtifactKind;
use brain_core::writes::Backend;
use brain_store_postgres::PgStore;
use brain_store_sqlx::sql::Scope;

/// Two remembers into one project: the second, into a known project, ends
/// with its connection kept for the next write.
async fn write_twice(store: &PgStore) {
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("atlas").unwrap();
    for i in 0..2 {
        let a = artifact(&project, ArtifactKind::Note, &format!("note {i}"));
        let mut tx = store.write(&acme).await.unwrap();
        let d = draft("brain_remember", Some(&project), None, "r", Ok(()));
        tx.remember(&who, &a, d).await.unwrap();
        tx.commit(None).await.unwrap();
    }
}

/// With the pool's other connection held by a read, a second read gets the
/// connection the last write kept within a moment, not after the pool's
/// acquire timeout (5 s).
#[tokio::test]
async fn a_kept_connection_goes_back_to_readers_at_once() {
    let (_db, store) = common::small_store(2).await;
    write_twice(&store).await;
    let first = tokio::time::timeout(Duration::from_secs(1), store.pooled())
        .await
        .expect("the pool's second connection at once")
        .unwrap();
    let second = tokio::time::timeout(Duration::from_secs(1), store.pooled())
        .await
        .expect("the kept connection back in sqlx's pool within a second")
        .unwrap();
    drop((first, second));
}

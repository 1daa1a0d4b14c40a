//! The behaviour story on a real PostgreSQL, one fresh database per test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use brain_core::store::{Store, StoreSettings};
use brain_store_postgres::PgStore;
use brain_testkit::TestDb;

async fn pg() -> (Arc<dyn Store>, TestDb) {
    let db = TestDb::create().await.expect("test database");
    let store = PgStore::connect(&db.url, StoreSettings::default())
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    (Arc::new(store), db)
}

brain_testkit::store_story!(pg());

//! The behaviour story on SQLite, one fresh database file per test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use brain_core::store::{Store, StoreSettings};
use brain_store_sqlite::SqliteStore;
use brain_testkit::TestSqlite;

async fn sqlite() -> (Arc<dyn Store>, TestSqlite) {
    let file = TestSqlite::new();
    let store = SqliteStore::connect(&file.url, StoreSettings::default())
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    (Arc::new(store), file)
}

brain_testkit::store_story!(sqlite());

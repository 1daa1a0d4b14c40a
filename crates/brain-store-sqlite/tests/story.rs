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

/// SQLite has no row-level security: a write transaction opened for one
/// tenant refuses an operation on another's rows.
#[tokio::test]
async fn a_write_transaction_keeps_to_its_tenant() {
    use brain_core::flow::CloseTx;
    use brain_core::ids::{ProjectKey, TenantId};
    use brain_core::writes::Backend;
    let file = TestSqlite::new();
    let store = SqliteStore::connect(&file.url, StoreSettings::default())
        .await
        .expect("open");
    store.migrate().await.expect("migrate");
    let (acme, globex) = (
        TenantId::parse("acme").unwrap(),
        TenantId::parse("globex").unwrap(),
    );
    let project = ProjectKey::parse("p").unwrap();
    let mut tx = store.write(&acme).await.unwrap();
    assert_eq!(tx.inbox_count(&acme, &project).await.unwrap(), 0);
    assert!(tx.inbox_count(&globex, &project).await.is_err());
    assert!(tx.ensure_project(&globex, &project).await.is_err());
}

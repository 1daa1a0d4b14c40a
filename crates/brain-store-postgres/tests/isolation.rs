//! brain's writes are made for READ COMMITTED; the store says when the
//! database gives its transactions another level (`brain serve` then
//! refuses to serve).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_store_postgres::PgStore;
use brain_testkit::db::TestDb;
use sqlx::Connection;

#[tokio::test]
async fn a_database_set_to_another_isolation_level_is_named() {
    let db = TestDb::create().await.unwrap();
    let store = PgStore::connect(&db.url, Default::default()).await.unwrap();
    assert_eq!(store.isolation_not_read_committed().await.unwrap(), None);
    store.pool().close().await;

    let mut admin = sqlx::PgConnection::connect(&db.inspect_url).await.unwrap();
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    sqlx::query(&format!(
        "ALTER DATABASE \"{name}\" SET default_transaction_isolation = 'repeatable read'"
    ))
    .execute(&mut admin)
    .await
    .unwrap();
    admin.close().await.unwrap();

    let store = PgStore::connect(&db.url, Default::default()).await.unwrap();
    assert_eq!(
        store
            .isolation_not_read_committed()
            .await
            .unwrap()
            .as_deref(),
        Some("repeatable read")
    );
    store.pool().close().await;
}

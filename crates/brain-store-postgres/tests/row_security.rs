//! Row-level security, the second tenant wall (SPEC §6): a tenant-scoped
//! transaction that forgets its `WHERE tenant_id` still sees and writes only
//! its own tenant's rows. Runs as the unprivileged role brain runs as.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_core::store::{Reads, StoreSettings};
use brain_store_postgres::PgStore;
use brain_testkit::TestDb;
use brain_testkit::story::{agent, start};

async fn two_tenants() -> (PgStore, TestDb) {
    let db = TestDb::create().await.expect("test database");
    let store = PgStore::connect(&db.url, StoreSettings::default())
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    for _ in 0..2 {
        start(&store, &agent("acme"), "p", "k", None).await;
    }
    for _ in 0..3 {
        start(&store, &agent("globex"), "p", "k", None).await;
    }
    (store, db)
}

#[tokio::test]
async fn a_query_without_where_tenant_sees_only_its_tenant() {
    let (store, _db) = two_tenants().await;
    let acme = TenantId::parse("acme").unwrap();
    let globex = TenantId::parse("globex").unwrap();
    let count = "SELECT count(*) FROM sessions";
    let mut tx = store.scoped(&acme).await.unwrap();
    let n: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await.unwrap();
    assert_eq!(n, 2, "acme sees its two sessions only");
    for table in [
        "receipts",
        "receipt_heads",
        "projects",
        "tenants",
        "focus_bodies",
    ] {
        let other: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM {table} WHERE tenant_id <> 'acme'"
        ))
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        assert_eq!(other, 0, "{table}: another tenant's rows are invisible");
    }
    // Writing into another tenant is refused by the policy's WITH CHECK.
    let wrote = sqlx::query("INSERT INTO tenants (tenant_id, created_at) VALUES ('evil', now())")
        .execute(&mut *tx)
        .await;
    assert!(wrote.is_err(), "a row of another tenant cannot be written");
    tx.rollback().await.unwrap();
    // ... nor updated: an UPDATE without WHERE touches only the scoped tenant.
    let mut tx = store.scoped(&globex).await.unwrap();
    let touched = sqlx::query("UPDATE sessions SET last_activity_at = last_activity_at")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(touched.rows_affected(), 3);
    tx.rollback().await.unwrap();

    // No scope at all: nothing is visible.
    let n: i64 = sqlx::query_scalar(count)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(n, 0, "an unscoped query sees no tenant");
    // The explicit system scope sees all.
    let mut tx = store.system().await.unwrap();
    let n: i64 = sqlx::query_scalar(count).fetch_one(&mut *tx).await.unwrap();
    assert_eq!(n, 5);
    tx.commit().await.unwrap();
    // The tools' own reads go through the scope and still work.
    assert_eq!(store.receipts(&acme).await.unwrap().len(), 2);
    assert!(store.tenant_exists(&globex).await.unwrap());
}

#[tokio::test]
async fn brain_runs_as_a_role_the_policies_bind() {
    let (store, _db) = two_tenants().await;
    let (superuser, bypass): (bool, bool) =
        sqlx::query_as("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert!(!superuser && !bypass);
    let forced: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_class WHERE relkind = 'r' AND relrowsecurity AND relforcerowsecurity \
         AND relnamespace = 'public'::regnamespace",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(forced, 14, "every tenant table has its policy in force");
    assert!(!store.rls_bypassed().await.unwrap());
}

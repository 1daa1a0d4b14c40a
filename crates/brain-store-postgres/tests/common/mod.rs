//! What the PostgreSQL store's tests share: a caller, and a migrated store
//! on a database of the test's own.
#![allow(dead_code, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_core::model::{Caller, CredentialKind, Role};
use brain_core::store::StoreSettings;
use brain_store_postgres::PgStore;
use brain_testkit::TestDb;

/// An agent of `tenant` with a JWT, on no MCP connection.
pub fn caller(tenant: &TenantId) -> Caller {
    Caller {
        tenant: tenant.clone(),
        kind: CredentialKind::Jwt,
        credential_id: "https://issuer/agent-1".into(),
        subject: "agent-1".into(),
        role: Role::Agent,
        connection_id: None,
        token_id: None,
        tracer_session: None,
    }
}

/// A migrated store on a new database, dropped with the returned `TestDb`.
pub async fn store() -> (TestDb, PgStore) {
    let db = TestDb::create().await.expect("test database");
    let store = PgStore::connect(&db.url, StoreSettings::default())
        .await
        .expect("connect");
    store.migrate().await.expect("migrate");
    (db, store)
}

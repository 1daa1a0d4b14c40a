//! What the PostgreSQL store's tests share: a caller, an artifact, and a
//! migrated store on a database of the test's own.
#![allow(dead_code, clippy::expect_used)]

use brain_core::ids::{ArtifactId, ProjectKey, TenantId};
use brain_core::model::{Artifact, ArtifactKind, Caller, CredentialKind, Role, now_micros};
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
    store_with(StoreSettings::default()).await
}

/// The same, with a pool of at most `pool_size` connections.
pub async fn small_store(pool_size: u32) -> (TestDb, PgStore) {
    store_with(StoreSettings {
        pool_size,
        ..StoreSettings::default()
    })
    .await
}

async fn store_with(settings: StoreSettings) -> (TestDb, PgStore) {
    let db = TestDb::create().await.expect("test database");
    let store = PgStore::connect(&db.url, settings).await.expect("connect");
    store.migrate().await.expect("migrate");
    (db, store)
}

/// An artifact of no session, created now, tagged `test`.
pub fn artifact(project: &ProjectKey, kind: ArtifactKind, text: &str) -> Artifact {
    Artifact {
        artifact_id: ArtifactId::new_random(),
        project: project.clone(),
        session_id: None,
        kind,
        text: text.into(),
        tags: vec!["test".into()],
        created_at: now_micros(),
        acknowledged_at: None,
        ack_note: None,
    }
}

/// A connection to `db` that bypasses brain (its owner's), after creating
/// `tenant`'s project `project` as brain's first write would.
pub async fn admin_with_project(
    db: &TestDb,
    tenant: &TenantId,
    project: &ProjectKey,
) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(&db.inspect_url)
        .await
        .expect("admin");
    sqlx::query("SELECT brain_ensure_project($1, $2, $3, now())")
        .bind(tenant.as_str())
        .bind(brain_core::receipt::GENESIS_HASH)
        .bind(project.as_str())
        .execute(&mut admin)
        .await
        .expect("project");
    admin
}

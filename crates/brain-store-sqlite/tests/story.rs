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
/// tenant reads and writes only that tenant's rows, the only tenant its
/// operations can name.
#[tokio::test]
async fn a_write_transaction_keeps_to_its_tenant() {
    use brain_core::flow::{WriteTx, draft};
    use brain_core::ids::ArtifactId;
    use brain_core::ids::{ProjectKey, TenantId};
    use brain_core::model::{Artifact, ArtifactKind, now_micros};
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
    let todo = Artifact {
        artifact_id: ArtifactId::new_random(),
        project: project.clone(),
        session_id: None,
        kind: ArtifactKind::Todo,
        text: "globex's".into(),
        tags: Vec::new(),
        created_at: now_micros(),
        acknowledged_at: None,
        ack_note: None,
    };
    let globex_caller = brain_testkit::story::agent("globex");
    let mut tx = store.write(&globex).await.unwrap();
    let d = draft("brain_remember", Some(&project), None, "r", Ok(()));
    tx.remember(&globex_caller, &todo, d).await.unwrap();
    tx.commit(None).await.unwrap();

    let mut tx = store.write(&acme).await.unwrap();
    assert_eq!(tx.tenant(), &acme);
    let ids = [todo.artifact_id];
    assert!(tx.lock_todos(&project, &ids).await.unwrap().is_empty());
    let note = Some("not acme's to acknowledge");
    assert_eq!(
        tx.acknowledge(&project, &ids, note, now_micros())
            .await
            .unwrap(),
        0
    );
    tx.commit(None).await.unwrap();
    let mut tx = store.write(&globex).await.unwrap();
    let states = tx.lock_todos(&project, &ids).await.unwrap();
    assert_eq!(states, [(todo.artifact_id, ArtifactKind::Todo, false)]);
}

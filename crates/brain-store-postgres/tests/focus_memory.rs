//! A replica's memory of focus reads (`brain_core::focus_cache`) on a real
//! PostgreSQL: it answers without a statement, yet never older than a change
//! committed before the read began, whoever made the change, and it forgets
//! everything when its listener is lost.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use brain_core::ids::{ProjectKey, TenantId};
use brain_core::store::{Reads, StoreSettings};
use brain_store_postgres::PgStore;
use sqlx::{Connection, PgConnection};

struct Fixture {
    _db: brain_testkit::TestDb,
    admin: PgConnection,
    tenant: TenantId,
    project: ProjectKey,
}

async fn fixture() -> (Fixture, PgStore) {
    let (db, store) = common::store().await;
    let mut admin = PgConnection::connect(&db.inspect_url).await.expect("admin");
    let tenant = TenantId::parse("acme").unwrap();
    let project = ProjectKey::parse("atlas").unwrap();
    sqlx::query("SELECT brain_ensure_project($1, $2, $3, now())")
        .bind(tenant.as_str())
        .bind(brain_core::receipt::GENESIS_HASH)
        .bind(project.as_str())
        .execute(&mut admin)
        .await
        .expect("project");
    let fx = Fixture {
        _db: db,
        admin,
        tenant,
        project,
    };
    (fx, store)
}

async fn replica(fx: &Fixture) -> PgStore {
    PgStore::connect(&fx._db.url, StoreSettings::default())
        .await
        .expect("connect")
        .remembering_focus()
}

impl Fixture {
    /// Write the base focus as any writer would (the trigger announces it).
    async fn write(&mut self, body: &str) -> i64 {
        sqlx::query_scalar(
            "UPDATE focus_bodies SET body = $3, revision = revision + 1, updated_at = now() \
             WHERE tenant_id = $1 AND project = $2 AND slot = '' RETURNING revision",
        )
        .bind(self.tenant.as_str())
        .bind(self.project.as_str())
        .bind(body)
        .fetch_one(&mut self.admin)
        .await
        .expect("write")
    }

    /// Write the base focus with triggers off: a change no replica hears.
    async fn write_unheard(&mut self, body: &str) -> i64 {
        let mut tx = self.admin.begin().await.expect("begin");
        sqlx::query("SET LOCAL session_replication_role = replica")
            .execute(&mut *tx)
            .await
            .expect("replica role");
        let revision = sqlx::query_scalar(
            "UPDATE focus_bodies SET body = $3, revision = revision + 1 \
             WHERE tenant_id = $1 AND project = $2 AND slot = '' RETURNING revision",
        )
        .bind(self.tenant.as_str())
        .bind(self.project.as_str())
        .bind(body)
        .fetch_one(&mut *tx)
        .await
        .expect("write");
        tx.commit().await.expect("commit");
        revision
    }

    async fn read(&self, store: &PgStore) -> (String, i64) {
        let (focus, _) = store
            .focus_with_slots(&self.tenant, &self.project)
            .await
            .expect("read");
        (focus.body, focus.revision)
    }
}

/// Reads until the replica listens (its first reads go to the database).
async fn warm(fx: &Fixture, store: &PgStore) {
    for _ in 0..50 {
        fx.read(store).await;
        if store.focus_memory_size().0 > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the replica never remembered a read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remembered_focus_is_answered_without_the_database() {
    let (mut fx, plain) = fixture().await;
    let remembering = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &remembering).await;
    // A change with the trigger off is one the memory cannot hear of: the
    // remembering replica keeps answering what it read, which shows the
    // answer came from memory; the database has the new body.
    let unheard = fx.write_unheard("v2").await;
    assert_eq!(fx.read(&remembering).await.0, "v1");
    assert_eq!(fx.read(&plain).await, ("v2".into(), unheard));
    // The next heard change of the project replaces it.
    let heard = fx.write("v3").await;
    assert_eq!(fx.read(&remembering).await, ("v3".into(), heard));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_replica_answers_older_than_a_change_committed_before_the_read() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    let b = replica(&fx).await;
    warm(&fx, &a).await;
    warm(&fx, &b).await;
    for i in 0..200 {
        let body = format!("body {i}");
        let revision = fx.write(&body).await;
        assert_eq!(
            fx.read(&a).await,
            (body.clone(), revision),
            "replica a, write {i}"
        );
        assert_eq!(fx.read(&b).await, (body, revision), "replica b, write {i}");
    }
    // And a slot created after the project was read shows in the listing.
    sqlx::query("INSERT INTO focus_bodies (tenant_id, project, slot) VALUES ($1, $2, 'frontend')")
        .bind(fx.tenant.as_str())
        .bind(fx.project.as_str())
        .execute(&mut fx.admin)
        .await
        .expect("slot");
    let (_, slots) = a
        .focus_with_slots(&fx.tenant, &fx.project)
        .await
        .expect("read");
    assert_eq!(slots.len(), 1);
    assert_eq!(slots[0].0.as_str(), "frontend");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_lost_its_listener_forgets_what_it_remembered() {
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    fx.write("v1").await;
    warm(&fx, &a).await;
    let unheard = fx.write_unheard("v2").await;
    assert_eq!(fx.read(&a).await.0, "v1", "answered from memory");
    // Changes made while the listener is away go unheard, so losing it must
    // forget everything.
    let listeners: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_all(&mut fx.admin)
    .await
    .expect("listeners");
    assert!(!listeners.is_empty(), "found the listener");
    sqlx::query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid")
        .bind(&listeners)
        .execute(&mut fx.admin)
        .await
        .expect("terminate");
    // Gone, so nothing more is heard through it.
    for _ in 0..100 {
        let left: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)")
                .bind(&listeners)
                .fetch_one(&mut fx.admin)
                .await
                .expect("count");
        if left == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    for _ in 0..20 {
        assert_eq!(fx.read(&a).await, ("v2".into(), unheard));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // And it listens again: reads are remembered, and answered from memory.
    warm(&fx, &a).await;
    fx.write_unheard("v3").await;
    assert_eq!(
        fx.read(&a).await,
        ("v2".into(), unheard),
        "answered from memory again"
    );
}

/// A replica with focus memory holds one LISTEN connection: the memory's
/// listener also tells the resource subscribers of applied ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_listen_connection_serves_the_memory_and_the_subscribers() {
    use brain_core::feed::FocusChange;
    use brain_core::store::Store;
    let (mut fx, _) = fixture().await;
    let a = replica(&fx).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    a.watch_focus(std::sync::Arc::new(move |c| {
        let _ = tx.send(c);
    }))
    .await
    .expect("watch");
    let listening: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND query ILIKE 'LISTEN%'",
    )
    .fetch_one(&mut fx.admin)
    .await
    .expect("count");
    assert_eq!(listening, 1, "one LISTEN connection per replica");
    let change = FocusChange {
        tenant: fx.tenant.clone(),
        project: fx.project.clone(),
        slot: None,
        revision: 7,
    };
    sqlx::query("SELECT pg_notify('brain_focus', $1)")
        .bind(change.to_payload())
        .execute(&mut fx.admin)
        .await
        .expect("notify");
    let heard = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
        .await
        .expect("heard in time");
    assert_eq!(heard, Some(change));
}

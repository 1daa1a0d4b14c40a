//! The rows a write decides by stay as it read them until it commits: each
//! read below is followed by another connection's change to its row, which
//! must wait (here: give up after a short `lock_timeout`) until the write
//! that read it has committed. Without the lock the change commits in the
//! middle of the write, and what the write answers or records is stale:
//! an elevated shrink after its elevation's revocation on the ledger, an
//! elevation granted on a connection already closed, a todo answered as
//! acknowledged by two calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller, store};

use brain_core::flow::WriteTx;
use brain_core::ids::{ArtifactId, ProjectKey, SessionId, TenantId};
use brain_core::model::{ArtifactKind, Role};
use brain_core::writes::Backend;
use sqlx::PgConnection;

struct Fixture {
    _db: brain_testkit::TestDb,
    store: brain_store_postgres::PgStore,
    admin: PgConnection,
    acme: TenantId,
    project: ProjectKey,
}

async fn fixture() -> Fixture {
    let (db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let project = ProjectKey::parse("p").unwrap();
    let mut admin = common::admin_with_project(&db, &acme, &project).await;
    sqlx::query("SET lock_timeout = '300ms'")
        .execute(&mut admin)
        .await
        .expect("lock_timeout");
    Fixture {
        _db: db,
        store,
        admin,
        acme,
        project,
    }
}

impl Fixture {
    /// Run `sql` on the admin connection: `Ok` when it went through,
    /// `Err(())` when it gave up waiting for a lock.
    async fn change(&mut self, sql: &str) -> Result<(), ()> {
        match sqlx::query(sql).execute(&mut self.admin).await {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("55P03") => Err(()),
            Err(e) => panic!("{sql}: {e}"),
        }
    }
}

#[tokio::test]
async fn a_revoke_waits_for_the_write_that_counted_the_elevation() {
    let mut fx = fixture().await;
    let session = SessionId::new_random();
    sqlx::query(
        "INSERT INTO elevations (tenant_id, elevation_id, credential_id, subject, session_id, \
         reason, granted_at, expires_at) \
         VALUES ('acme', gen_random_uuid(), $1, 'op', $2, 'test', now(), now() + interval '1 hour')",
    )
    .bind(caller(&fx.acme).credential_id)
    .bind(session.as_uuid())
    .execute(&mut fx.admin)
    .await
    .expect("elevation");
    let mut op = caller(&fx.acme);
    op.role = Role::Operator;
    let revoke = "UPDATE elevations SET revoked_at = now() WHERE tenant_id = 'acme'";

    let mut tx = fx.store.write(&fx.acme).await.unwrap();
    assert!(tx.elevation_active(&op, session).await.unwrap());
    assert_eq!(
        fx.change(revoke).await,
        Err(()),
        "revoked under a write that counted it"
    );
    tx.commit(None).await.unwrap();
    assert_eq!(fx.change(revoke).await, Ok(()));
    let mut tx = fx.store.write(&fx.acme).await.unwrap();
    assert!(!tx.elevation_active(&op, session).await.unwrap());
}

#[tokio::test]
async fn a_close_waits_for_the_grant_that_read_its_connection() {
    let mut fx = fixture().await;
    sqlx::query(
        "INSERT INTO mcp_connections (tenant_id, connection_id, credential_kind, credential_id, \
         opened_at, last_seen_at, role) VALUES ('acme', 'c1', 'jwt', 'cred', now(), now(), 'operator')",
    )
    .execute(&mut fx.admin)
    .await
    .expect("connection");
    let close = "UPDATE mcp_connections SET closed_at = now() WHERE tenant_id = 'acme'";

    let mut tx = fx.store.write(&fx.acme).await.unwrap();
    let owner = tx.connection_owner("c1").await.unwrap().unwrap();
    assert!(!owner.closed);
    assert_eq!(
        fx.change(close).await,
        Err(()),
        "closed under a grant that read it open"
    );
    tx.commit(None).await.unwrap();
    assert_eq!(fx.change(close).await, Ok(()));
}

#[tokio::test]
async fn a_second_acknowledgement_waits_for_the_first() {
    let mut fx = fixture().await;
    let todo = artifact(&fx.project, ArtifactKind::Todo, "do it");
    let mut tx = fx.store.write(&fx.acme).await.unwrap();
    let d = brain_core::flow::draft("brain_remember", Some(&fx.project), None, "d", Ok(()));
    tx.remember(&caller(&fx.acme), &todo, d).await.unwrap();
    tx.commit(None).await.unwrap();
    let ack = "UPDATE artifacts SET acknowledged_at = now() WHERE tenant_id = 'acme'";

    let ids: Vec<ArtifactId> = vec![todo.artifact_id];
    let mut tx = fx.store.write(&fx.acme).await.unwrap();
    let states = tx.lock_todos(&fx.project, &ids).await.unwrap();
    assert_eq!(states.len(), 1);
    assert!(!states[0].2, "not acknowledged yet");
    assert_eq!(
        fx.change(ack).await,
        Err(()),
        "acknowledged under an ack that read it open"
    );
    tx.commit(None).await.unwrap();
    assert_eq!(fx.change(ack).await, Ok(()));
}

//! Group commit of one tenant's `brain_remember`s (src/group.rs): many at once
//! share commits, and the chain, the rows and every answer are what they
//! would be one at a time; a write that fails in a batch fails alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller, store};

use std::sync::Arc;

use brain_core::flow::{WriteTx, draft};
use brain_core::ids::{ProjectKey, TenantId};
use brain_core::model::{Artifact, ArtifactKind, Caller};
use brain_core::receipt::verify_with_tip;
use brain_core::store::Reads;
use brain_core::writes::Backend;
use brain_store_postgres::PgStore;

/// Wait until `holds` is true (checked every 10 ms, for at most 30 s): tasks
/// are ordered by what the test can see, not by sleeping.
async fn until<F, Fut>(what: &str, holds: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..3_000 {
        if holds().await {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("never true: {what}");
}

async fn remember(store: &PgStore, who: &Caller, a: &Artifact) -> Result<(), String> {
    let mut tx = store.write(&who.tenant).await.map_err(|e| e.to_string())?;
    let d = draft("brain_remember", Some(&a.project), None, "r", Ok(()));
    tx.remember(who, a, d).await.map_err(|e| e.to_string())?;
    tx.commit(None).await.map_err(|e| e.to_string())
}

/// `n` remembers at once into `project`, each its own task.
async fn at_once(
    store: &Arc<PgStore>,
    who: &Caller,
    artifacts: Vec<Artifact>,
) -> Vec<Result<(), String>> {
    let tasks: Vec<_> = artifacts
        .into_iter()
        .map(|a| {
            let (store, who) = (store.clone(), who.clone());
            tokio::spawn(async move { remember(&store, &who, &a).await })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

struct Fixture {
    db: brain_testkit::TestDb,
    store: Arc<PgStore>,
    acme: TenantId,
    who: Caller,
    project: ProjectKey,
}

/// A store whose tenant `acme` has written once into `atlas`: the project's
/// first write, which runs alone (it creates the project).
async fn fixture() -> Fixture {
    let (db, store) = store().await;
    let store = Arc::new(store);
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("atlas").unwrap();
    let first = artifact(&project, ArtifactKind::Note, "first");
    remember(&store, &who, &first).await.unwrap();
    Fixture {
        db,
        store,
        acme,
        who,
        project,
    }
}

/// The tenant's chain, verified against its tip: its length.
async fn chain(store: &PgStore, tenant: &TenantId) -> Result<usize, String> {
    let receipts = store.receipts(tenant).await.unwrap();
    let tip = store.ledger_tip(tenant).await.unwrap();
    verify_with_tip(&receipts, (tip.0, &tip.1)).map_err(|e| format!("{e:?}"))
}

async fn artifacts(db: &brain_testkit::TestDb) -> usize {
    let admin = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM artifacts")
        .fetch_one(&admin)
        .await
        .unwrap();
    usize::try_from(n).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_tenants_remembers_share_commits_and_chain_as_one_at_a_time() {
    let Fixture {
        db,
        store,
        acme,
        who,
        project,
    } = fixture().await;
    let mut rounds: usize = 0;
    while store.group_commits().0 == 0 && rounds < 10 {
        let batch = (0..32)
            .map(|i| artifact(&project, ArtifactKind::Note, &format!("note {rounds}/{i}")))
            .collect();
        for r in at_once(&store, &who, batch).await {
            r.unwrap();
        }
        rounds += 1;
    }
    assert!(
        store.group_commits().0 > 0,
        "no two remembers shared a commit"
    );
    assert_eq!(store.group_commits().1, 0, "a batch was rolled back");

    let written = 1 + 32 * rounds;
    assert_eq!(chain(&store, &acme).await, Ok(written));
    let receipts = store.receipts(&acme).await.unwrap();
    assert_eq!(
        receipts.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (1..=written as i64).collect::<Vec<_>>()
    );
    assert_eq!(artifacts(&db).await, written);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_that_fails_in_a_batch_fails_alone() {
    let Fixture {
        db,
        store,
        acme,
        who,
        project,
    } = fixture().await;
    let taken = artifact(&project, ArtifactKind::Note, "taken");
    remember(&store, &who, &taken).await.unwrap();
    let mut rounds = 0;
    let mut ok: usize = 2;
    // Each round: 16 good writes and one reusing a taken artifact id, at once,
    // until the bad one has been in a batch (which it rolls back).
    while rounds < 10 {
        let mut batch: Vec<Artifact> = (0..16)
            .map(|i| artifact(&project, ArtifactKind::Note, &format!("good {rounds}/{i}")))
            .collect();
        let mut dup = artifact(&project, ArtifactKind::Note, "duplicate id");
        dup.artifact_id = taken.artifact_id;
        batch.insert(8, dup);
        let results = at_once(&store, &who, batch).await;
        for (i, r) in results.iter().enumerate() {
            if i == 8 {
                assert!(r.is_err(), "the duplicate was written");
            } else {
                assert!(r.is_ok(), "good write {i} failed: {r:?}");
            }
        }
        ok += 16;
        rounds += 1;
        if store.group_commits().1 > 0 {
            break;
        }
    }
    assert!(
        store.group_commits().1 > 0,
        "the bad write never ran in a batch"
    );
    assert_eq!(chain(&store, &acme).await, Ok(ok));
    assert_eq!(artifacts(&db).await, ok, "a failed write left a row");
}

/// A caller that goes away while its write waits in the queue writes
/// nothing, as it would not have alone; the others queued with it are
/// written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_whose_caller_left_before_its_batch_is_not_written() {
    let Fixture {
        db,
        store,
        acme,
        who,
        project,
    } = fixture().await;
    // Hold the tenant's tip, so the next write (the leader's) waits on it
    // while the others queue behind.
    let admin = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let mut holder = admin.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM receipt_heads WHERE tenant_id = 'acme' FOR UPDATE")
        .execute(&mut *holder)
        .await
        .unwrap();
    let spawn = |text: &str| {
        let (store, who, a) = (
            store.clone(),
            who.clone(),
            artifact(&project, ArtifactKind::Note, text),
        );
        tokio::spawn(async move { remember(&store, &who, &a).await })
    };
    let leader = spawn("leader");
    // The leader has taken its own write and waits on the tip...
    until("the leader waits on the tenant's tip", || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(&admin)
        .await
        .unwrap()
            >= 1
    })
    .await;
    // ...and the two others are queued for the batch after it.
    let gone = spawn("gone");
    let kept = spawn("kept");
    until("two writes queued", || async {
        store.group_queued(&acme) == 2
    })
    .await;
    gone.abort();
    assert!(gone.await.unwrap_err().is_cancelled());
    holder.rollback().await.unwrap();
    leader.await.unwrap().unwrap();
    kept.await.unwrap().unwrap();

    let texts: Vec<String> = sqlx::query_scalar("SELECT text FROM artifacts ORDER BY created_at")
        .fetch_all(&admin)
        .await
        .unwrap();
    assert_eq!(texts, ["first", "leader", "kept"]);
    assert_eq!(chain(&store, &acme).await, Ok(3));
}

/// Starts into a known project with no bound slot join the same group
/// commit: many at once share commits, each opens its own session with its
/// own receipt, and the chain verifies as if they ran one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_tenants_starts_share_commits_and_chain_as_one_at_a_time() {
    use brain_core::digest::request_digest;
    use brain_core::ids::ClientKey;
    use brain_core::requests::StartRequest;
    use brain_core::writes::SessionWrites;

    let Fixture {
        db: _db,
        store,
        acme,
        who,
        project,
    } = fixture().await;
    let mut rounds: usize = 0;
    let mut sessions = std::collections::HashSet::new();
    while store.group_commits().0 == 0 && rounds < 10 {
        let tasks: Vec<_> = (0..32)
            .map(|i| {
                let (store, who, project) = (store.clone(), who.clone(), project.clone());
                let key = format!("client-{rounds}-{i}");
                tokio::spawn(async move {
                    store
                        .start_session(
                            &who,
                            StartRequest {
                                project,
                                client_key: ClientKey::parse("client_key", &key).unwrap(),
                                slot: None,
                                digest: request_digest(&serde_json::json!({"k": key})),
                            },
                        )
                        .await
                })
            })
            .collect();
        for t in tasks {
            let opened = t.await.unwrap().unwrap();
            assert!(sessions.insert(opened.session.session_id));
        }
        rounds += 1;
    }
    assert!(store.group_commits().0 > 0, "no two starts shared a commit");
    assert_eq!(store.group_commits().1, 0, "a batch was rolled back");
    let written = 1 + 32 * rounds;
    assert_eq!(chain(&store, &acme).await, Ok(written));
    let receipts = store.receipts(&acme).await.unwrap();
    let started: std::collections::HashSet<_> = receipts
        .iter()
        .filter(|r| r.tool == "brain_session_start")
        .filter_map(|r| r.session_id)
        .collect();
    assert_eq!(started, sessions, "one start receipt per session opened");
}

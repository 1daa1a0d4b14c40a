//! The one-call writes: a start as a write's first statement (in its own
//! statement's transaction) and inside a transaction already begun answer
//! alike and leave alike rows; the
//! receipts placed with the commit chain; a write dropped mid-transaction
//! leaves no transaction open in the pool; the database hashes receipts as
//! brain-core does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller, store};

use brain_core::flow::{self, CloseWrite, WriteTx, draft};
use brain_core::ids::{ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{ArtifactKind, Caller, Session, SessionStatus, now_micros};
use brain_core::receipt::verify_with_tip;
use brain_core::store::Reads;
use brain_core::writes::Backend;
use brain_store_postgres::PgStore;

/// Open a session on `project` bound to `slot`, as the write's first
/// statement or after another, committed; its answer.
async fn start(
    store: &PgStore,
    who: &Caller,
    project: &ProjectKey,
    slot: &SlotName,
    one_trip: bool,
) -> (
    Session,
    Option<brain_core::model::Focus>,
    brain_core::store::BriefingSources,
) {
    let mut s = Session::open_agent(
        who,
        project.clone(),
        ClientKey::parse("client_key", "c1").unwrap(),
        Some(slot.clone()),
        99,
    );
    let d = draft(
        "brain_session_start",
        Some(project),
        Some(s.session_id),
        "d",
        Ok(()),
    );
    let mut tx = store.write(&who.tenant).await.unwrap();
    if !one_trip {
        // A transaction that has begun runs the call inside it.
        tx.focus(project, None).await.unwrap();
    }
    let (focus, sources) = tx.open_session(who, &mut s, d).await.unwrap();
    tx.commit(None).await.unwrap();
    (s, focus, sources)
}

/// A tenant with one session open (in one call) on project `p`, bound to `s1`.
struct Started {
    db: brain_testkit::TestDb,
    store: PgStore,
    acme: TenantId,
    who: Caller,
    project: ProjectKey,
    slot: SlotName,
    session: Session,
}

async fn started() -> Started {
    let (db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let slot = SlotName::parse("s1").unwrap();
    let (session, _, _) = start(&store, &who, &project, &slot, true).await;
    Started {
        db,
        store,
        acme,
        who,
        project,
        slot,
        session,
    }
}

#[tokio::test]
async fn a_start_in_one_call_answers_and_writes_as_the_separate_statements_do() {
    let (_db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let slot = SlotName::parse("s1").unwrap();
    let mut answers = Vec::new();
    for (name, one_trip) in [("one-call", true), ("statements", false)] {
        let project = ProjectKey::parse(name).unwrap();
        // A first start creates the project and slot; a second finds the
        // first open (its recovery) and the same client's sessions counted.
        let (first, f1, b1) = start(&store, &who, &project, &slot, one_trip).await;
        let (second, f2, b2) = start(&store, &who, &project, &slot, one_trip).await;
        assert_eq!(
            b2.previous_open.map(|p| p.0),
            Some(first.session_id),
            "{name}"
        );
        let detail = store.session_get(&acme, second.session_id).await.unwrap();
        assert_eq!(detail.session.status, SessionStatus::Open, "{name}");
        assert_eq!(detail.session.bound_slot, Some(slot.clone()), "{name}");
        answers.push((
            first.started_focus_revision,
            second.started_focus_revision,
            f1.map(|f| (f.body, f.revision, f.updated_at)),
            f2.map(|f| (f.body, f.revision, f.updated_at)),
            (b1.base.revision, b1.open_sessions, b1.inbox_count),
            (b2.base.revision, b2.open_sessions, b2.recent_sessions.len()),
        ));
    }
    assert_eq!(answers[0], answers[1]);
    assert_eq!(
        answers[0].2,
        Some((String::new(), 0, None)),
        "a new slot is empty"
    );
    assert_eq!(answers[0].5, (0, 2, 0));
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(4));
}

#[tokio::test]
async fn receipts_placed_with_the_commit_chain_and_carry_the_history_row() {
    let Started {
        db: _db,
        store,
        acme,
        who,
        project,
        slot,
        session: s,
    } = started().await;

    // A remember in one call, then a close whose receipt and history row are
    // placed with its commit.
    let a = artifact(&project, ArtifactKind::Note, "loose");
    let mut tx = store.write(&acme).await.unwrap();
    let d = draft("brain_remember", Some(&project), None, "r", Ok(()));
    tx.remember(&who, &a, d).await.unwrap();
    tx.commit(None).await.unwrap();

    let mut tx = store.write(&acme).await.unwrap();
    let locked = tx.lock_close(s.session_id).await.unwrap().unwrap();
    let mut closed = locked.session.clone();
    closed.status = SessionStatus::Ended;
    closed.ended_at = Some(now_micros());
    let w = flow::FocusWrite {
        session: &s,
        body: "the slot's new body",
        revision: locked.target.revision + 1,
        at: now_micros(),
    };
    let d = draft(
        "brain_session_end",
        Some(&project),
        Some(s.session_id),
        "e",
        Ok(()),
    );
    let result = serde_json::json!({"status": "ended"});
    let write = CloseWrite {
        session: &closed,
        focus: Some(w),
        next_session: None,
        next_focus: flow::StoredNextFocus::of(&closed, Some(&w), Some(&locked.target)),
        digest: "e",
        result: &result,
        receipt: d,
    };
    tx.apply_close(&who, write).await.unwrap();
    tx.commit(None).await.unwrap();

    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(3));
    assert_eq!(
        receipts.iter().map(|r| r.tool.as_str()).collect::<Vec<_>>(),
        ["brain_session_start", "brain_remember", "brain_session_end"]
    );
    let history = store
        .focus_history(&acme, &project, Some(&slot), None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].receipt_seq, history[0].body.as_str()),
        (3, "the slot's new body"),
        "the history row names the close's receipt and holds the body it wrote"
    );

    // A receipt left for a commit that never comes is never placed.
    let mut tx = store.write(&acme).await.unwrap();
    tx.provision(None).await.unwrap();
    let d = draft("brain_remember", Some(&project), None, "x", Ok(()));
    let a = artifact(&project, ArtifactKind::Note, "never committed");
    tx.remember(&who, &a, d).await.unwrap();
    drop(tx);
    let after = store.receipts(&acme).await.unwrap();
    assert_eq!(after.len(), 3);
}

#[tokio::test]
async fn a_write_dropped_mid_transaction_leaves_no_transaction_open() {
    let Started {
        db,
        store,
        acme,
        session: s,
        ..
    } = started().await;
    for _ in 0..4 {
        let mut tx = store.write(&acme).await.unwrap();
        // Holds the session's row lock, then is dropped, as a call whose
        // client went away is.
        assert!(tx.lock_session(s.session_id).await.unwrap().is_some());
        drop(tx);
    }
    // The rollbacks run on their own; wait for them, then nothing is idle in
    // a transaction and the session can be locked again.
    let admin = sqlx::PgPool::connect(&db.url).await.unwrap();
    let mut open = -1_i64;
    for _ in 0..50 {
        open = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND state LIKE 'idle in transaction%'",
        )
        .fetch_one(&admin)
        .await
        .unwrap();
        if open == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(open, 0, "a dropped write's transaction was left open");
    let mut tx = store.write(&acme).await.unwrap();
    assert!(tx.lock_session(s.session_id).await.unwrap().is_some());
    assert!(
        tx.lock_session(SessionId::new_random())
            .await
            .unwrap()
            .is_none()
    );
    tx.commit(None).await.unwrap();
}

#[tokio::test]
async fn the_database_hashes_receipts_as_brain_core_does() {
    let (_db, store) = store().await;
    assert!(store.receipt_hash_agrees().await.unwrap());
}

/// A write that locks session `s`, then remembers `a` in it: the call left
/// for the commit, which the caller sends.
async fn remember_in(
    store: &PgStore,
    who: &Caller,
    s: &Session,
    a: &brain_core::model::Artifact,
    digest: &str,
) -> <PgStore as Backend>::Tx {
    let mut tx = store.write(&who.tenant).await.unwrap();
    tx.lock_session(s.session_id).await.unwrap().unwrap();
    let d = draft(
        "brain_remember",
        Some(&s.project),
        Some(s.session_id),
        digest,
        Ok(()),
    );
    tx.remember(who, a, d).await.unwrap();
    tx
}

#[tokio::test]
async fn a_remember_in_a_begun_transaction_holds_the_tip_only_in_its_commit() {
    let Started {
        db,
        store,
        acme,
        who,
        project,
        session: s,
        ..
    } = started().await;
    // The admin role, which row-level security does not bind.
    let other = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let tip_free = || async {
        let mut c = other.begin().await.unwrap();
        let locked =
            sqlx::query("SELECT 1 FROM receipt_heads WHERE tenant_id = 'acme' FOR UPDATE NOWAIT")
                .fetch_optional(&mut *c)
                .await;
        c.rollback().await.unwrap();
        match locked {
            Ok(row) => row.is_some(),
            Err(e) => {
                let code = e.as_database_error().and_then(|d| d.code());
                assert_eq!(code.as_deref(), Some("55P03"), "{e}");
                false
            }
        }
    };
    assert!(tip_free().await, "nothing holds the tip at rest");

    // A remember with a session: the session is locked first, so the call
    // runs inside a transaction that has begun.
    let mut a = artifact(&project, ArtifactKind::Decision, "tags [\"x\", \"ü\"]");
    a.session_id = Some(s.session_id);
    a.tags = vec!["x".into(), "ü".into(), String::new()];
    let tx = remember_in(&store, &who, &s, &a, "m").await;
    assert!(
        tip_free().await,
        "the remember has not taken the tenant's tip before its commit"
    );
    tx.commit(None).await.unwrap();

    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(2));
    assert_eq!(receipts[1].tool, "brain_remember");
    assert_eq!(receipts[1].session_id, Some(s.session_id));
    let ledger = store.session_ledger(&acme, s.session_id, 10).await.unwrap();
    assert_eq!(ledger.len(), 1, "the artifact is in the session's ledger");
    let stored = &ledger[0];
    assert_eq!(
        (
            &stored.artifact_id,
            &stored.text,
            &stored.tags,
            stored.created_at
        ),
        (&a.artifact_id, &a.text, &a.tags, a.created_at),
        "the artifact is stored as given, through the setting's JSON"
    );

    // A failure of the call at the COMMIT (an artifact id already stored)
    // writes nothing, and the next write goes through.
    // Left for the commit.
    let tx = remember_in(&store, &who, &s, &a, "n").await;
    assert!(tx.commit(None).await.is_err(), "the same artifact twice");
    assert_eq!(store.receipts(&acme).await.unwrap().len(), 2);
    let loose = artifact(&project, ArtifactKind::Note, "after the failure");
    let mut tx = store.write(&acme).await.unwrap();
    let d = draft("brain_remember", Some(&project), None, "p", Ok(()));
    tx.remember(&who, &loose, d).await.unwrap();
    tx.commit(None).await.unwrap();

    // Text JSON must escape, and a store that has not seen the project yet
    // (its first write there ensures it, inside the same call).
    let fresh = PgStore::connect(&db.url, Default::default()).await.unwrap();
    let mut b = artifact(
        &project,
        ArtifactKind::Note,
        "quote \" back\\slash\nline\ttab {\"k\": [1]}",
    );
    b.session_id = Some(s.session_id);
    b.tags = Vec::new();
    let tx = remember_in(&fresh, &who, &s, &b, "o").await;
    tx.commit(None).await.unwrap();
    let ledger = fresh.session_ledger(&acme, s.session_id, 10).await.unwrap();
    let stored = ledger
        .iter()
        .find(|x| x.artifact_id == b.artifact_id)
        .unwrap();
    assert_eq!((&stored.text, &stored.tags), (&b.text, &b.tags));
    let receipts = fresh.receipts(&acme).await.unwrap();
    let tip = fresh.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(4));
}

//! An end in one call (`brain_peek_close`, then `brain_end`) writes only
//! what its read saw: when the target body or the answer's counts moved
//! after the read, or another transaction holds the session, it writes
//! nothing, at once, and the end is decided again on what stands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{caller, store};

use std::time::Duration;

use brain_core::flow::{self, CloseWrite, DecidedOn, FocusWrite, StoredNextFocus, WriteTx, draft};
use brain_core::ids::{ClientKey, ProjectKey, TenantId};
use brain_core::model::{Caller, FocusOutcome, Session, SessionStatus, now_micros};
use brain_core::receipt::verify_with_tip;
use brain_core::requests::{EndRequest, MergeStep};
use brain_core::rules::Door;
use brain_core::store::Reads;
use brain_core::writes::Backend;
use brain_store_postgres::PgStore;
use serde_json::json;
use sqlx::Connection;

fn end_request(s: &Session, body: &str, revision: i64, digest: &str) -> EndRequest {
    EndRequest {
        session_id: s.session_id,
        expected_client_key: "c1".into(),
        summary: "done".into(),
        next_focus: body.into(),
        expected_focus_revision: revision,
        nothing_to_capture_reason: None,
        allow_focus_shrink: false,
        dry_run: false,
        keep_focus: false,
        door: Door::Brain,
        digest: digest.into(),
        merge: MergeStep::Off,
    }
}

async fn open(store: &PgStore, who: &Caller, project: &ProjectKey) -> Session {
    let mut s = Session::open_agent(
        who,
        project.clone(),
        ClientKey::parse("client_key", "c1").unwrap(),
        None,
        0,
    );
    let d = draft(
        "brain_session_start",
        Some(project),
        Some(s.session_id),
        "d",
        Ok(()),
    );
    let mut tx = store.write(&who.tenant).await.unwrap();
    tx.open_session(who, &mut s, d).await.unwrap();
    tx.commit(None).await.unwrap();
    s
}

/// The end `read` decided: applied, its body at the revision after `found`.
async fn write_as_read(store: &PgStore, who: &Caller, read: &Session, found: i64) -> bool {
    write_after(store, who, read, found, async {}).await
}

/// [`write_as_read`], with `meanwhile` run between its read and its write.
async fn write_after(
    store: &PgStore,
    who: &Caller,
    read: &Session,
    found: i64,
    meanwhile: impl std::future::Future<Output = ()>,
) -> bool {
    let mut tx = store.write(&who.tenant).await.unwrap();
    let until = now_micros();
    let peeked = tx
        .peek_close(read.session_id, until)
        .await
        .unwrap()
        .expect("PostgreSQL writes an end in one call");
    assert!(peeked.loaded.is_some(), "the read finds the session");
    meanwhile.await;
    let mut closed = read.clone();
    closed.status = SessionStatus::Ended;
    closed.ended_at = Some(now_micros());
    closed.summary = Some("mine".into());
    closed.focus_outcome = Some(FocusOutcome::Applied);
    let stored = json!({"focus_outcome": "applied", "focus_revision_at_end": found + 1});
    let write = CloseWrite {
        session: &closed,
        focus: Some(FocusWrite {
            session: &closed,
            body: "the body of the end that read too early",
            revision: found + 1,
            at: now_micros(),
        }),
        next_session: None,
        next_focus: StoredNextFocus::of(&closed, None, None),
        digest: "early",
        result: &stored,
        receipt: draft(
            "brain_session_end",
            Some(&read.project),
            Some(read.session_id),
            "early",
            Ok(()),
        ),
    };
    let on = DecidedOn {
        found,
        until,
        unattributed: &peeked.unattributed,
        open_agents: peeked.open_agents,
    };
    let written = tx.close_in_one_call(who, write, on).await.unwrap();
    if written {
        tx.commit(None).await.unwrap();
    }
    written
}

#[tokio::test]
async fn an_end_in_one_call_writes_nothing_once_what_it_read_has_moved() {
    let (db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let mine = open(&store, &who, &project).await;

    // Another session moves the base focus to revision 1 after this end's
    // read saw revision 0.
    let other = open(&store, &who, &project).await;
    let tx = store.write(&acme).await.unwrap();
    let moved = flow::close(tx, &who, &end_request(&other, "moved", 0, "o"), None)
        .await
        .unwrap();
    assert_eq!(moved["focus_outcome"], "applied", "{moved}");
    assert!(!write_as_read(&store, &who, &mine, 0).await);
    let focus = store.focus_get(&acme, &project, None).await.unwrap();
    assert_eq!((focus.body.as_str(), focus.revision), ("moved", 1));
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(
        detail.session.status,
        SessionStatus::Open,
        "nothing written"
    );

    // Another transaction holds the session: the call does not wait for it.
    let mut holder = sqlx::PgConnection::connect(&db.inspect_url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut holder).await.unwrap();
    sqlx::query("SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE")
        .bind(mine.session_id.as_uuid())
        .execute(&mut holder)
        .await
        .unwrap();
    let held = tokio::time::timeout(
        Duration::from_secs(10),
        write_as_read(&store, &who, &mine, 1),
    )
    .await
    .expect("an end in one call never waits on a row another transaction holds");
    assert!(!held, "a held session is left to the locked way");
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(
        detail.session.status,
        SessionStatus::Open,
        "nothing written"
    );

    // The end as the agent sends it decides on what stands: its proposal
    // against revision 0 is a conflict now.
    let tx = store.write(&acme).await.unwrap();
    let end = flow::close(tx, &who, &end_request(&mine, "mine", 0, "m"), None)
        .await
        .unwrap();
    assert_eq!(end["focus_outcome"], "conflict", "{end}");
    assert_eq!(end["focus_revision_at_end"], 1, "{end}");

    // Nothing the two refused writes tried is in the chain: two starts and
    // two ends.
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(4));
    let history = store
        .focus_history(&acme, &project, None, None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1, "one revision written");
}

#[tokio::test]
async fn an_end_in_one_call_writes_what_it_read() {
    let (_db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let mine = open(&store, &who, &project).await;
    assert!(write_as_read(&store, &who, &mine, 0).await);
    let focus = store.focus_get(&acme, &project, None).await.unwrap();
    assert_eq!(
        (focus.body.as_str(), focus.revision),
        ("the body of the end that read too early", 1)
    );
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(detail.session.status, SessionStatus::Ended);
    let history = store
        .focus_history(&acme, &project, None, None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(2));
    assert_eq!(
        history[0].receipt_seq, receipts[1].seq,
        "the history row names the end's receipt"
    );
}

/// Another session of the project ended between the read and the write:
/// the answer's count of sessions left open would be stale, so nothing is
/// written, and the end, decided again, counts what stands.
#[tokio::test]
async fn an_end_in_one_call_writes_nothing_once_its_counts_have_moved() {
    let (_db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let mine = open(&store, &who, &project).await;
    let other = open(&store, &who, &project).await;
    let other_ends = async {
        let tx = store.write(&acme).await.unwrap();
        let out = flow::close(tx, &who, &end_request(&other, "theirs", 0, "o"), None)
            .await
            .unwrap();
        assert_eq!(out["focus_outcome"], "applied", "{out}");
        assert_eq!(out["focus_revision_at_end"], 1, "{out}");
        assert_eq!(out["remaining_open_session_count"], 1, "{out}");
    };
    // The other end moved the body to revision 1; the write is told it read
    // revision 1, so only the count it read (2 open) differs from what stands.
    assert!(!write_after(&store, &who, &mine, 1, other_ends).await);
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(
        detail.session.status,
        SessionStatus::Open,
        "nothing written"
    );
    let receipts = store.receipts(&acme).await.unwrap();
    assert_eq!(receipts.len(), 3, "two starts and the other's end");
    let history = store
        .focus_history(&acme, &project, None, None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1, "only the other's revision");
    let tx = store.write(&acme).await.unwrap();
    let end = flow::close(
        tx,
        &who,
        &end_request(&mine, "theirs and mine", 1, "m"),
        None,
    )
    .await
    .unwrap();
    assert_eq!(end["focus_outcome"], "applied", "{end}");
    assert_eq!(end["remaining_open_session_count"], 0, "{end}");
}

/// A relay in one call (`brain_relay`) opens its receiver's session only
/// with the close: when the close writes nothing, no session is opened
/// either; when it writes, the receiver's session is as sent.
#[tokio::test]
async fn a_relay_in_one_call_opens_its_receiver_only_with_the_close() {
    let (_db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let mine = open(&store, &who, &project).await;
    let relay = |found: i64| {
        let store = &store;
        let (who, mine) = (&who, &mine);
        async move {
            let mut tx = store.write(&who.tenant).await.unwrap();
            let until = now_micros();
            let peeked = tx
                .peek_close(mine.session_id, until)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(peeked.base_revision, 0, "the base focus as read");
            let mut closed = mine.clone();
            closed.status = SessionStatus::Relayed;
            closed.ended_at = Some(now_micros());
            closed.focus_outcome = Some(FocusOutcome::Unchanged);
            let mut next = Session::open_agent(
                who,
                mine.project.clone(),
                ClientKey::parse("client_key", "c2").unwrap(),
                None,
                peeked.base_revision,
            );
            next.relayed_from = Some(mine.session_id);
            next.read_revision = Some(peeked.base_revision);
            let stored = json!({"focus_outcome": "unchanged"});
            let write = CloseWrite {
                session: &closed,
                focus: None,
                next_session: Some(&next),
                next_focus: StoredNextFocus::of(&closed, None, None),
                digest: "r",
                result: &stored,
                receipt: draft(
                    "brain_session_relay",
                    Some(&mine.project),
                    Some(mine.session_id),
                    "r",
                    Ok(()),
                ),
            };
            let on = DecidedOn {
                found,
                until,
                unattributed: &peeked.unattributed,
                open_agents: peeked.open_agents,
            };
            let written = tx.close_in_one_call(who, write, on).await.unwrap();
            if written {
                tx.commit(None).await.unwrap();
            }
            (written, next)
        }
    };
    // Told it read revision 3 of a body at 0: the close writes nothing.
    let (written, next) = relay(3).await;
    assert!(!written);
    assert!(
        store.session_get(&acme, next.session_id).await.is_err(),
        "no receiver's session without the close"
    );
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(detail.session.status, SessionStatus::Open);
    assert_eq!(store.receipts(&acme).await.unwrap().len(), 1, "the start's");

    let (written, next) = relay(0).await;
    assert!(written);
    let got = store.session_get(&acme, next.session_id).await.unwrap();
    assert_eq!(got.session.status, SessionStatus::Open);
    assert_eq!(got.session.client_key.as_str(), "c2");
    assert_eq!(got.session.relayed_from, Some(mine.session_id));
    assert_eq!(got.session.started_focus_revision, 0);
    assert_eq!(got.session.read_revision, Some(0));
    assert_eq!(got.session.opened_at, next.opened_at, "to the microsecond");
    let detail = store.session_get(&acme, mine.session_id).await.unwrap();
    assert_eq!(detail.session.status, SessionStatus::Relayed);
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(2));
    assert_eq!(receipts[1].tool, "brain_session_relay");
}

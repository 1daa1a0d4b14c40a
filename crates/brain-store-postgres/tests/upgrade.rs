//! A database written by the previous schema (migrations up to 0018), then
//! migrated: its ends are answered again as they were, its receipt chain
//! verifies, and new writes go on it.
//!
//! The previous schema's end stored its whole answer (the body included),
//! kept the body a third time as the session's next_focus, and counted
//! usage at each statement; the schema now stores the body once (its
//! history row, which the answer and the next_focus name) and counts usage
//! at COMMIT. The previous end is written here in SQL, as the previous
//! server's statements left it, with the previous schema's own receipt
//! function (`brain_place_receipt`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::caller;

use std::borrow::Cow;

use brain_core::flow::{self, WriteTx, draft};
use brain_core::ids::{ClientKey, ProjectKey, TenantId};
use brain_core::model::{FocusOutcome, Session, SessionStatus, now_micros};
use brain_core::receipt::{Receipt, verify_with_tip};
use brain_core::requests::{EndRequest, MergeStep};
use brain_core::rules::Door;
use brain_core::store::{OperatorReads, Reads, StoreSettings};
use brain_core::writes::Backend;
use brain_store_postgres::{MIGRATOR, PgStore};
use brain_testkit::TestDb;
use serde_json::json;

/// The previous schema's last migration.
const PREVIOUS: i64 = 18;

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

/// The answer the database stores for `s`'s close (`sessions.close_result`).
async fn stored_answer(inspect: &sqlx::PgPool, s: &Session) -> serde_json::Value {
    sqlx::query_scalar("SELECT close_result FROM sessions WHERE session_id = $1")
        .bind(s.session_id.as_uuid())
        .fetch_one(inspect)
        .await
        .unwrap()
}

async fn open(store: &PgStore, who: &brain_core::model::Caller, project: &ProjectKey) -> Session {
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

#[tokio::test]
async fn a_database_of_the_previous_schema_migrates_and_answers_as_it_did() {
    let db = TestDb::create().await.unwrap();
    let store = PgStore::connect(&db.url, StoreSettings::default())
        .await
        .unwrap();
    let previous = sqlx::migrate::Migrator {
        migrations: Cow::Owned(
            MIGRATOR
                .migrations
                .iter()
                .filter(|m| m.version <= PREVIOUS)
                .cloned()
                .collect(),
        ),
        ignore_missing: false,
        locking: true,
        no_tx: false,
    };
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    previous.run(&pool).await.unwrap();
    let has_end: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'brain_end')")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(!has_end, "the previous schema has no brain_end");

    // The previous server's end: the whole answer stored, body included, and
    // the session's next_focus a second copy of the body. Written in SQL as
    // the previous schema took it (today's statements name columns it does
    // not have): the session, the body, its receipt placed on the tip
    // (`brain_place_receipt`, which the previous schema has) and the body's
    // history row naming that receipt.
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("p").unwrap();
    let s = open(&store, &who, &project).await;
    let body = "the body the previous schema wrote";
    let mut closed = s.clone();
    closed.status = SessionStatus::Ended;
    closed.ended_at = Some(now_micros());
    closed.summary = Some("done".into());
    closed.next_focus = Some(body.into());
    closed.focus_outcome = Some(FocusOutcome::Applied);
    let stored = json!({
        "session": closed, "replayed": false, "dry_run": false, "would": null,
        "focus_outcome": "applied", "focus_at_end": {"body": body, "revision": 1},
        "focus_revision_at_end": 1, "current_focus": null, "current_focus_revision": 1,
        "focus_diff": "", "unattributed_in_window": {"count": 0, "ids": []},
        "remaining_open_session_count": 0
    });
    let receipt = Receipt::unplaced(
        &who,
        draft(
            "brain_session_end",
            Some(&project),
            Some(s.session_id),
            "old-end",
            Ok(()),
        ),
        now_micros(),
    );
    let frame = receipt.frame();
    let mut old = pool.begin().await.unwrap();
    sqlx::query("SELECT set_config('brain.tenant', 'acme', true)")
        .execute(&mut *old)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE sessions SET status = 'ended', ended_at = $2, last_activity_at = $2, \
         summary = 'done', next_focus = $3, focus_outcome = 'applied', \
         close_digest = 'old-end', close_result = $4 \
         WHERE tenant_id = 'acme' AND session_id = $1",
    )
    .bind(s.session_id.as_uuid())
    .bind(closed.ended_at)
    .bind(body)
    .bind(&stored)
    .execute(&mut *old)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE focus_bodies SET body = $1, revision = 1, updated_at = now(), \
         updated_by_session = $2 WHERE tenant_id = 'acme' AND project = 'p' AND slot = ''",
    )
    .bind(body)
    .bind(s.session_id.as_uuid())
    .execute(&mut *old)
    .await
    .unwrap();
    let seq: i64 = sqlx::query_scalar(
        "SELECT seq FROM brain_place_receipt('acme', $1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13, $14, $15)",
    )
    .bind(receipt.receipt_id.as_uuid())
    .bind(receipt.at)
    .bind(&receipt.tool)
    .bind(receipt.project.as_deref())
    .bind(receipt.session_id.map(|id| id.as_uuid()))
    .bind(receipt.credential_kind.as_str())
    .bind(&receipt.subject)
    .bind(receipt.token_id.as_deref())
    .bind(receipt.connection_id.as_deref())
    .bind(receipt.elevated)
    .bind(&receipt.outcome)
    .bind(&receipt.request_digest)
    .bind(&frame.before_prev)
    .bind(&frame.before_seq)
    .bind(&frame.after_seq)
    .fetch_one(&mut *old)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO focus_history (tenant_id, project, slot, revision, body, session_id, \
         receipt_seq, created_at) VALUES ('acme', 'p', '', 1, $1, $2, $3, now())",
    )
    .bind(body)
    .bind(s.session_id.as_uuid())
    .bind(seq)
    .execute(&mut *old)
    .await
    .unwrap();
    old.commit().await.unwrap();
    let usage_before = store.tenant_usage(&acme).await.unwrap().bytes;

    store.migrate().await.unwrap();

    // The chain the previous schema wrote verifies on the new one.
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(2));
    assert_eq!(
        store.tenant_usage(&acme).await.unwrap().bytes,
        usage_before - i64::try_from(body.len()).unwrap(),
        "the migration counts the next_focus it no longer stores twice"
    );

    // The session's next_focus is its body's history row now, read back.
    let inspect = sqlx::PgPool::connect(&db.inspect_url).await.unwrap();
    let (text, revision): (Option<String>, Option<i64>) = sqlx::query_as(
        "SELECT next_focus, next_focus_revision FROM sessions WHERE session_id = $1",
    )
    .bind(s.session_id.as_uuid())
    .fetch_one(&inspect)
    .await
    .unwrap();
    assert_eq!((text, revision), (None, Some(1)), "stored once");
    let got = store.session_get(&acme, s.session_id).await.unwrap();
    assert_eq!(got.session.next_focus.as_deref(), Some(body));

    // The focus row no longer holds the body either: its history row does.
    let held: Option<String> = sqlx::query_scalar(
        "SELECT body FROM focus_bodies WHERE tenant_id = 'acme' AND slot = '' AND revision = 1",
    )
    .fetch_one(&inspect)
    .await
    .unwrap();
    assert_eq!(held, None, "the focus row names its history row");
    let focus = store.focus_get(&acme, &project, None).await.unwrap();
    assert_eq!((focus.body.as_str(), focus.revision), (body, 1));

    // The answer stored whole keeps its body but not its copy of the
    // session (0040): its end, asked again, answers as it did, the session
    // read from its row.
    let kept = stored_answer(&inspect, &s).await;
    assert!(kept.get("session").is_none(), "{kept}");
    assert_eq!(kept["focus_at_end"]["body"], body, "{kept}");
    let tx = store.write(&acme).await.unwrap();
    let replay = flow::close(tx, &who, &end_request(&s, body, 0, "old-end"), None)
        .await
        .unwrap();
    assert_eq!(replay["replayed"], true, "{replay}");
    assert_eq!(replay["focus_at_end"]["body"], body, "{replay}");
    assert_eq!(replay["focus_revision_at_end"], 1, "{replay}");
    let mut answered = serde_json::to_value(&closed).unwrap();
    answered["next_focus"] = serde_json::Value::Null;
    answered["last_activity_at"] = answered["ended_at"].clone();
    assert_eq!(replay["session"], answered, "the session from its row");

    // A new pair on the new schema: its end stores the body once (its
    // history row), and a replay puts it back where the answer carried it.
    let s2 = open(&store, &who, &project).await;
    let next = "the body the new schema wrote";
    let tx = store.write(&acme).await.unwrap();
    let end = flow::close(tx, &who, &end_request(&s2, next, 1, "new-end"), None)
        .await
        .unwrap();
    assert_eq!(end["focus_outcome"], "applied", "{end}");
    assert_eq!(end["focus_at_end"]["body"], next, "{end}");
    let kept = stored_answer(&inspect, &s2).await;
    assert_eq!(
        kept["focus_at_end"],
        json!({"revision": 2}),
        "the stored answer holds no second copy of the body"
    );
    let tx = store.write(&acme).await.unwrap();
    let replay = flow::close(tx, &who, &end_request(&s2, next, 1, "new-end"), None)
        .await
        .unwrap();
    assert_eq!(replay["replayed"], true, "{replay}");
    let mut answered = end.clone();
    answered["replayed"] = json!(true);
    assert_eq!(replay, answered, "a replay answers as the end did");

    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(4));
    let history = store
        .focus_history(&acme, &project, None, None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 2, "each revision's body is its history row");
}

//! PostgreSQL overrides most of `SqlTx`'s writes with fused statements, so
//! the story never runs its texts for the portable writes
//! (`brain_store_sqlx::sql::writes`, the form SQLite runs). Here they run on a real
//! PostgreSQL, so a text that no longer fits its table fails a test instead of
//! waiting for the day an override is removed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::{artifact, caller, store};

use brain_core::flow::{FocusWrite, draft};
use brain_core::ids::{ArtifactId, ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{ArtifactKind, Session, SessionStatus, now_micros};
use brain_core::receipt::verify_with_tip;
use brain_core::store::Reads;
use brain_store_sqlx::sql::Scope;
use brain_store_sqlx::sql::SqlTx;
use brain_store_sqlx::sql::writes;

#[tokio::test]
async fn the_portable_writes_run_on_postgresql() {
    let (_db, store) = store().await;
    let acme = TenantId::parse("acme").unwrap();
    let who = caller(&acme);
    let project = ProjectKey::parse("portable").unwrap();
    let slot = SlotName::parse("s1").unwrap();

    let mut tx = store.write_tx(&acme).await.unwrap();
    writes::ensure_project(&mut tx, &acme, &project)
        .await
        .unwrap();
    let mut s = Session::open_agent(
        &who,
        project.clone(),
        ClientKey::parse("client_key", "c1").unwrap(),
        Some(slot.clone()),
        99,
    );
    let body = writes::open_session(&mut tx, &acme, &mut s).await.unwrap();
    assert_eq!(s.started_focus_revision, 0, "read from the base focus");
    assert_eq!(body.unwrap().revision, 0, "a new slot is empty");
    let start = draft(
        "brain_session_start",
        Some(&project),
        Some(s.session_id),
        "d1",
        Ok(()),
    );
    let r1 = writes::append_receipt(&mut tx, &who, start, None)
        .await
        .unwrap();
    assert_eq!(r1.seq, 1);

    let loose = artifact(&project, ArtifactKind::Note, "no session's");
    let todo = artifact(&project, ArtifactKind::Todo, "do it");
    writes::insert_artifact(&mut tx, &acme, &loose)
        .await
        .unwrap();
    writes::insert_artifact(&mut tx, &acme, &todo)
        .await
        .unwrap();
    let states = writes::artifact_states(
        &mut tx,
        &acme,
        &project,
        &[todo.artifact_id, ArtifactId::new_random()],
    )
    .await
    .unwrap();
    assert_eq!(states, vec![(todo.artifact_id, ArtifactKind::Todo, false)]);
    writes::acknowledge(
        &mut tx,
        &acme,
        &project,
        &[todo.artifact_id],
        Some("done"),
        now_micros(),
    )
    .await
    .unwrap();
    let states = writes::artifact_states(&mut tx, &acme, &project, &[todo.artifact_id])
        .await
        .unwrap();
    assert_eq!(states, vec![(todo.artifact_id, ArtifactKind::Todo, true)]);

    let other = Session::open_agent(
        &who,
        project.clone(),
        ClientKey::parse("client_key", "c1").unwrap(),
        None,
        0,
    );
    let briefing = writes::briefing_sources(&mut tx, &acme, &other)
        .await
        .unwrap();
    assert_eq!(
        briefing.previous_open.map(|p| p.0),
        Some(s.session_id),
        "the client's other open session"
    );
    assert_eq!(briefing.open_sessions, 1);
    assert_eq!(briefing.inbox_count, 0, "the todo was acknowledged");

    let locked = writes::lock_close(&mut tx, &acme, s.session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(locked.session.bound_slot, Some(slot.clone()));
    assert!(
        writes::lock_close(&mut tx, &acme, SessionId::new_random())
            .await
            .unwrap()
            .is_none()
    );
    let (unattributed, open) = writes::close_counts(&mut tx, &acme, &s, now_micros())
        .await
        .unwrap();
    assert_eq!(
        (unattributed.count, unattributed.ids.len(), open),
        (2, 2, 1)
    );

    let mut closed = s.clone();
    closed.status = SessionStatus::Ended;
    closed.ended_at = Some(now_micros());
    closed.summary = Some("portable".into());
    let w = FocusWrite {
        session: &s,
        body: "the slot's new body",
        revision: 1,
        at: now_micros(),
    };
    let result = serde_json::json!({"status": "ended"});
    writes::apply_close(&mut tx, &acme, &closed, Some(w), "d2", &result)
        .await
        .unwrap();
    let end = draft(
        "brain_session_end",
        Some(&project),
        Some(s.session_id),
        "d2",
        Ok(()),
    );
    let r2 = writes::append_receipt(&mut tx, &who, end, Some(w))
        .await
        .unwrap();
    assert_eq!((r2.seq, r2.prev_hash.as_str()), (2, r1.hash.as_str()));
    SqlTx::commit(tx, None).await.unwrap();

    // What the portable writes left is what the reads see.
    let receipts = store.receipts(&acme).await.unwrap();
    let tip = store.ledger_tip(&acme).await.unwrap();
    assert_eq!(verify_with_tip(&receipts, (tip.0, &tip.1)), Ok(2));
    let focus = store.focus_get(&acme, &project, Some(&slot)).await.unwrap();
    assert_eq!(
        (focus.body.as_str(), focus.revision),
        ("the slot's new body", 1)
    );
    let history = store
        .focus_history(&acme, &project, Some(&slot), None, 10)
        .await
        .unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].receipt_seq, 2);
    let detail = store.session_get(&acme, s.session_id).await.unwrap();
    assert_eq!(detail.session.status, SessionStatus::Ended);
    assert_eq!(detail.session.summary.as_deref(), Some("portable"));
}

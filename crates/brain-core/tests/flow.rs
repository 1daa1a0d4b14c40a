//! The flows (start, bind, end, relay, abandon, remember, documents,
//! elevations, connections, project deletion) against the in-memory store:
//! every refusal of the SPEC's order of checks, what each call wrote, and
//! that a refusal writes its receipt and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::digest::request_digest;
use brain_core::error::{DomainError, ErrorCode, StoreError};
use brain_core::ids::{ClientKey, ElevationId, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::memory::{DocumentKind, DocumentPut, MAX_MENTAL_MODELS};
use brain_core::model::{ArtifactKind, Caller, CredentialKind, Role, Session, SessionStatus};
use brain_core::operators::{ElevationRequest, ElevationTarget};
use brain_core::receipt::verify_chain;
use brain_core::requests::{
    AbandonRequest, BindRequest, EndRequest, MergeStep, RelayRequest, RememberRequest,
    StartRequest, TodoAckRequest,
};
use brain_core::rules::Door;
use brain_core::store::ConnectionCaps;
use brain_core::writes::{Backend, SessionWrites};
use brain_store_memory::{MemoryStore, Tables};
use serde_json::json;

fn store() -> MemoryStore {
    MemoryStore::new(21_600, 1_800)
}

fn caller(sub: &str, role: Role) -> Caller {
    Caller {
        tenant: TenantId::parse("acme").unwrap(),
        kind: CredentialKind::Jwt,
        credential_id: format!("brain|{sub}"),
        subject: sub.to_owned(),
        role,
        connection_id: None,
        token_id: None,
        tracer_session: None,
    }
}

fn agent() -> Caller {
    caller("agent", Role::Agent)
}

fn operator() -> Caller {
    caller("op", Role::Operator)
}

fn project() -> ProjectKey {
    ProjectKey::parse("p").unwrap()
}

async fn start(s: &MemoryStore, c: &Caller, key: &str, slot: Option<&str>) -> Session {
    let req = StartRequest {
        project: project(),
        client_key: ClientKey::parse("client_key", key).unwrap(),
        slot: slot.map(|x| SlotName::parse(x).unwrap()),
        digest: request_digest(&json!({"start": key, "slot": slot})),
    };
    s.start_session(c, req).await.unwrap().session
}

fn end_req(id: SessionId, key: &str, next_focus: &str, revision: i64) -> EndRequest {
    let mut r = EndRequest {
        session_id: id,
        expected_client_key: key.to_owned(),
        summary: "what was done".to_owned(),
        next_focus: next_focus.to_owned(),
        expected_focus_revision: revision,
        nothing_to_capture_reason: None,
        allow_focus_shrink: false,
        dry_run: false,
        keep_focus: false,
        door: Door::Brain,
        digest: String::new(),
        merge: MergeStep::Off,
    };
    redigest(&mut r);
    r
}

fn redigest(r: &mut EndRequest) {
    r.digest = request_digest(&json!({
        "id": r.session_id.to_string(), "key": r.expected_client_key, "summary": r.summary,
        "next": r.next_focus, "rev": r.expected_focus_revision,
        "why": r.nothing_to_capture_reason, "shrink": r.allow_focus_shrink,
        "dry": r.dry_run, "keep": r.keep_focus, "merge": !matches!(r.merge, MergeStep::Off),
    }));
}

fn refused(out: Result<impl std::fmt::Debug, StoreError>) -> DomainError {
    match out {
        Err(StoreError::Domain(d)) => d,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn tables(s: &MemoryStore) -> Tables {
    let t = s.tables(&TenantId::parse("acme").unwrap()).await;
    assert_eq!(
        verify_chain(&t.receipts),
        Ok(t.receipts.len()),
        "the chain verifies"
    );
    t
}

/// The outcomes of the receipts after the first `skip`.
async fn outcomes_after(s: &MemoryStore, skip: usize) -> Vec<String> {
    let t = tables(s).await;
    t.receipts
        .iter()
        .skip(skip)
        .map(|r| r.outcome.clone())
        .collect()
}

fn base(t: &Tables) -> (String, i64) {
    let f = t.focus_of(&project(), None);
    (f.body, f.revision)
}

fn status(t: &Tables, id: SessionId) -> SessionStatus {
    t.sessions[&id].0.status
}

#[tokio::test]
async fn start_opens_a_session_with_its_receipt() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let b = start(&s, &c, "b", Some("ui")).await;
    let t = tables(&s).await;
    assert_eq!(status(&t, a.session_id), SessionStatus::Open);
    assert_eq!(t.sessions[&b.session_id].0.read_revision, Some(0));
    assert!(
        t.focus.contains_key(&(project(), "ui".to_owned())),
        "the slot is created"
    );
    let tools: Vec<&str> = t.receipts.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["brain_session_start", "brain_session_start"]);
    // A second start by the same client briefs the first as its recovery.
    let req = StartRequest {
        project: project(),
        client_key: ClientKey::parse("client_key", "a").unwrap(),
        slot: None,
        digest: "again".into(),
    };
    let again = s.start_session(&c, req).await.unwrap();
    let recovery = again.briefing.recovery.expect("the open session is named");
    assert_eq!(recovery.session_id, a.session_id);
    assert_eq!(again.briefing.open_sessions, 3);
}

#[tokio::test]
async fn end_refusals_follow_the_order_of_checks_and_write_only_their_receipt() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    s.end_session(&c, end_req(a.session_id, "a", "0123456789", 0))
        .await
        .unwrap();
    let b = start(&s, &c, "b", None).await;
    let n0 = tables(&s).await.receipts.len();

    // 1. An unknown session.
    let r = end_req(SessionId::new_random(), "b", "x", 1);
    assert_eq!(
        refused(s.end_session(&c, r).await).code,
        ErrorCode::SessionNotFound
    );
    // 2. The wrong client key, before anything about the body.
    let mut r = end_req(b.session_id, "wrong", "", 99);
    r.summary = " ".into();
    redigest(&mut r);
    assert_eq!(
        refused(s.end_session(&c, r).await).code,
        ErrorCode::ClientKeyMismatch
    );
    // 3. A closed session, unless the call is the one that closed it.
    let r = end_req(a.session_id, "a", "another body", 1);
    assert_eq!(
        refused(s.end_session(&c, r).await).code,
        ErrorCode::SessionClosed
    );
    // 4. Blank fields.
    for field in ["summary", "next_focus", "nothing_to_capture_reason"] {
        let mut r = end_req(b.session_id, "b", "0123456789", 1);
        match field {
            "summary" => r.summary = "\t".into(),
            "next_focus" => r.next_focus = "  ".into(),
            _ => r.nothing_to_capture_reason = Some(" ".into()),
        }
        redigest(&mut r);
        let e = refused(s.end_session(&c, r).await);
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{field}");
        assert!(e.message.contains(field), "{}", e.message);
    }
    // 5. An override without an elevation, even when nothing shrinks.
    let mut r = end_req(b.session_id, "b", "0123456789 and more", 1);
    r.allow_focus_shrink = true;
    redigest(&mut r);
    let code = refused(s.end_session(&c, r).await).code;
    assert_eq!(code, ErrorCode::FocusShrinkOverrideRefused);
    // 6. The shrink guard, before the stale revision decides anything.
    let e = refused(
        s.end_session(&c, end_req(b.session_id, "b", "012345", 0))
            .await,
    );
    assert_eq!(e.code, ErrorCode::BaseFocusShrink);
    assert_eq!(
        e.details,
        json!({"current": 10, "proposed": 6, "floor": 7, "stale": true, "current_revision": 1})
    );
    // A dry run's refusal writes nothing, not even its receipt.
    let mut r = end_req(b.session_id, "b", "012", 1);
    r.dry_run = true;
    redigest(&mut r);
    assert_eq!(
        refused(s.end_session(&c, r).await).code,
        ErrorCode::BaseFocusShrink
    );

    assert_eq!(
        outcomes_after(&s, n0).await,
        [
            "session_not_found",
            "client_key_mismatch",
            "session_closed",
            "invalid_argument",
            "invalid_argument",
            "invalid_argument",
            "focus_shrink_override_refused",
            "base_focus_shrink",
        ]
    );
    let t = tables(&s).await;
    assert_eq!(status(&t, b.session_id), SessionStatus::Open, "still open");
    assert_eq!(
        base(&t),
        ("0123456789".to_owned(), 1),
        "the focus unchanged"
    );
    // 7. At the floor exactly, it applies.
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "0123456", 1))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    assert_eq!(base(&tables(&s).await), ("0123456".to_owned(), 2));
}

#[tokio::test]
async fn a_tracer_session_is_never_closed_by_a_lifecycle_tool() {
    let s = store();
    let c = agent();
    let caps = ConnectionCaps {
        per_credential: 8,
        per_tenant: 64,
    };
    s.connection_open(&c, "conn-1", None, caps).await.unwrap();
    let t = tables(&s).await;
    let (tracer, _) = t.sessions.values().next().expect("the tracer").clone();
    let key = tracer.client_key.as_str().to_owned();
    let r = end_req(tracer.session_id, &key, "x", 0);
    assert_eq!(
        refused(s.end_session(&c, r).await).code,
        ErrorCode::TracerSession
    );
    assert_eq!(
        status(&tables(&s).await, tracer.session_id),
        SessionStatus::Open
    );
}

#[tokio::test]
async fn ends_apply_conflict_keep_and_replay() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let b = start(&s, &c, "b", None).await;
    let first = end_req(a.session_id, "a", "the plan", 0);
    let out = s.end_session(&c, first.clone()).await.unwrap();
    assert_eq!(
        (
            out["focus_outcome"].clone(),
            out["focus_revision_at_end"].clone()
        ),
        (json!("applied"), json!(1))
    );
    // The same call again answers what it answered, and writes nothing.
    let n = tables(&s).await.receipts.len();
    let again = s.end_session(&c, first).await.unwrap();
    assert_eq!(again["replayed"], json!(true));
    assert_eq!(again["focus_outcome"], json!("applied"));
    assert_eq!(
        again["focus_diff"], out["focus_diff"],
        "the diff is computed again"
    );
    assert_eq!(tables(&s).await.receipts.len(), n);
    // A stale revision conflicts: the session closes, the focus stays.
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "another plan", 0))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("conflict"));
    let t = tables(&s).await;
    assert_eq!(status(&t, b.session_id), SessionStatus::Conflicted);
    assert_eq!(base(&t), ("the plan".to_owned(), 1));
    assert_eq!(t.history.len(), 1, "one revision written");
    // The same body again is unchanged: no new revision.
    let c2 = start(&s, &c, "c", None).await;
    let out = s
        .end_session(&c, end_req(c2.session_id, "c", "the plan", 1))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("unchanged"));
    assert_eq!(base(&tables(&s).await).1, 1);
}

/// A close stores its answer without the session (the row it wrote holds
/// it) and a replay puts it back from the row: the replay answers exactly
/// what the call answered, for an applied end, a conflict (whose session
/// carries its proposal) and a relay (whose session names its receiver).
#[tokio::test]
async fn a_replay_answers_the_closed_session_from_its_row() {
    let s = store();
    let c = agent();
    let replayed = |mut v: serde_json::Value| {
        v["replayed"] = json!(true);
        v
    };
    let stored = |t: &Tables, id: SessionId| t.sessions[&id].1.clone().unwrap().result;

    let a = start(&s, &c, "a", None).await;
    let b = start(&s, &c, "b", None).await;
    let first = end_req(a.session_id, "a", "the plan", 0);
    let out = s.end_session(&c, first.clone()).await.unwrap();
    assert_eq!(out["session"]["status"], json!("ended"), "{out}");
    let t = tables(&s).await;
    assert!(stored(&t, a.session_id).get("session").is_none());
    assert_eq!(s.end_session(&c, first).await.unwrap(), replayed(out));

    let lost = end_req(b.session_id, "b", "another plan", 0);
    let out = s.end_session(&c, lost.clone()).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("conflict"));
    assert_eq!(out["session"]["next_focus"], json!("another plan"));
    assert!(
        stored(&tables(&s).await, b.session_id)
            .get("session")
            .is_none()
    );
    // The focus has not moved since: the replay's current focus is the same.
    assert_eq!(s.end_session(&c, lost).await.unwrap(), replayed(out));

    let bound = start(&s, &c, "r", Some("ui")).await;
    let relay = RelayRequest {
        end: end_req(bound.session_id, "r", "handed over", 0),
        to_client_key: "b2".to_owned(),
    };
    let out = s.relay_session(&c, relay.clone()).await.unwrap();
    assert_eq!(
        out["session"]["relayed_to"],
        out["new_session"]["session_id"]
    );
    assert!(
        stored(&tables(&s).await, bound.session_id)
            .get("session")
            .is_none()
    );
    assert_eq!(s.relay_session(&c, relay).await.unwrap(), replayed(out));
}

#[tokio::test]
async fn a_merging_end_merges_disjoint_edits() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    s.end_session(&c, end_req(a.session_id, "a", "one\ntwo\nthree\n", 0))
        .await
        .unwrap();
    let b = start(&s, &c, "b", None).await;
    let d = start(&s, &c, "d", None).await;
    s.end_session(&c, end_req(b.session_id, "b", "ONE\ntwo\nthree\n", 1))
        .await
        .unwrap();
    let mut r = end_req(d.session_id, "d", "one\ntwo\nTHREE\n", 1);
    r.merge = MergeStep::Asked;
    redigest(&mut r);
    let out = s.end_session(&c, r).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("merged"));
    assert_eq!(base(&tables(&s).await), ("ONE\ntwo\nTHREE\n".to_owned(), 3));
}

#[tokio::test]
async fn bound_sessions_end_on_their_slot_and_shrink_it_as_a_slot() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", Some("ui")).await;
    s.end_session(&c, end_req(a.session_id, "a", "0123456789", 0))
        .await
        .unwrap();
    let b = start(&s, &c, "b", Some("ui")).await;
    let e = refused(s.end_session(&c, end_req(b.session_id, "b", "01", 1)).await);
    assert_eq!(e.code, ErrorCode::SlotFocusShrink);
    let t = tables(&s).await;
    assert_eq!(
        base(&t),
        (String::new(), 0),
        "the base focus is not the slot's"
    );
}

#[tokio::test]
async fn bind_binds_once() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let bind = |slot: &str, key: &str| BindRequest {
        session_id: a.session_id,
        expected_client_key: key.to_owned(),
        slot: SlotName::parse(slot).unwrap(),
        digest: format!("bind {slot}"),
    };
    let code = refused(s.bind_session(&c, bind("ui", "x")).await).code;
    assert_eq!(code, ErrorCode::ClientKeyMismatch);
    let out = s.bind_session(&c, bind("ui", "a")).await.unwrap();
    assert_eq!(out.slot.revision, 0);
    let t = tables(&s).await;
    assert!(
        t.focus.contains_key(&(project(), "ui".to_owned())),
        "the slot is created"
    );
    let bound = &t.sessions[&a.session_id].0;
    assert_eq!(bound.bound_slot.as_ref().map(|s| s.as_str()), Some("ui"));
    assert_eq!(bound.read_revision, Some(0));
    // The same slot again answers as the first bind did, and writes only
    // its receipt.
    let n = tables(&s).await.receipts.len();
    let again = s.bind_session(&c, bind("ui", "a")).await.unwrap();
    assert_eq!((again.slot.name.as_str(), again.slot.revision), ("ui", 0));
    assert_eq!(tables(&s).await.receipts.len(), n + 1);
    let e = refused(s.bind_session(&c, bind("other", "a")).await);
    assert_eq!(e.code, ErrorCode::AlreadyBound);
    s.end_session(&c, end_req(a.session_id, "a", "done", 0))
        .await
        .unwrap();
    let e = refused(s.bind_session(&c, bind("ui", "a")).await);
    assert_eq!(e.code, ErrorCode::SessionClosed);
}

#[tokio::test]
async fn relay_needs_a_slot_and_hands_it_over() {
    let s = store();
    let c = agent();
    let unbound = start(&s, &c, "a", None).await;
    let relay = |end: EndRequest, to: &str| RelayRequest {
        end,
        to_client_key: to.to_owned(),
    };
    let r = relay(end_req(unbound.session_id, "a", "body", 0), "b");
    let e = refused(s.relay_session(&c, r).await);
    assert_eq!(e.code, ErrorCode::RelayRequiresSlot);
    let bound = start(&s, &c, "a2", Some("ui")).await;
    let r = relay(end_req(bound.session_id, "a2", "body", 0), " ");
    let e = refused(s.relay_session(&c, r).await);
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let r = relay(end_req(bound.session_id, "a2", "handed over", 0), "b");
    let out = s.relay_session(&c, r).await.unwrap();
    let next: SessionId =
        SessionId::parse(out["new_session"]["session_id"].as_str().unwrap()).unwrap();
    let t = tables(&s).await;
    let (receiver, _) = &t.sessions[&next];
    assert_eq!(receiver.status, SessionStatus::Open);
    assert_eq!(receiver.client_key.as_str(), "b");
    assert_eq!(receiver.relayed_from, Some(bound.session_id));
    assert_eq!(receiver.read_revision, Some(1));
    assert_eq!(t.sessions[&bound.session_id].0.relayed_to, Some(next));
    assert_eq!(out["slot"]["revision"], json!(1));
}

#[tokio::test]
async fn abandon_needs_a_reason_and_consent() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let req = |reason: &str, confirm: bool, dry_run: bool| AbandonRequest {
        session_id: a.session_id,
        expected_client_key: "a".into(),
        reason: reason.to_owned(),
        confirm,
        dry_run,
        digest: format!("abandon {reason} {confirm} {dry_run}"),
    };
    let n0 = tables(&s).await.receipts.len();
    let e = refused(s.abandon_session(&c, req(" ", true, false)).await);
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let e = refused(s.abandon_session(&c, req("stuck", false, false)).await);
    assert_eq!(e.code, ErrorCode::ConfirmRequired);
    let preview = s
        .abandon_session(&c, req("stuck", false, true))
        .await
        .unwrap();
    assert_eq!(preview["would"], json!("abandoned"));
    assert_eq!(
        outcomes_after(&s, n0).await,
        ["invalid_argument", "confirm_required"],
        "the preview wrote nothing"
    );
    assert_eq!(status(&tables(&s).await, a.session_id), SessionStatus::Open);
    s.abandon_session(&c, req("stuck", true, false))
        .await
        .unwrap();
    let again = s
        .abandon_session(&c, req("stuck", true, false))
        .await
        .unwrap();
    assert_eq!(again["replayed"], json!(true));
    let t = tables(&s).await;
    assert_eq!(status(&t, a.session_id), SessionStatus::Abandoned);
    assert_eq!(base(&t), (String::new(), 0), "abandon writes no focus");
}

#[tokio::test]
async fn remember_joins_an_open_session_of_its_project() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let note = |project: &str, session: Option<(SessionId, &str)>| RememberRequest {
        project: ProjectKey::parse(project).unwrap(),
        kind: ArtifactKind::Todo,
        text: "check the cache".into(),
        tags: vec!["cache".into()],
        session: session.map(|(id, k)| (id, k.to_owned())),
        digest: "remember".into(),
    };
    let n0 = tables(&s).await.receipts.len();
    let e = refused(s.remember(&c, note("p", Some((a.session_id, "x")))).await);
    assert_eq!(e.code, ErrorCode::ClientKeyMismatch);
    let e = refused(s.remember(&c, note("q", Some((a.session_id, "a")))).await);
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let r = note("p", Some((SessionId::new_random(), "a")));
    assert_eq!(
        refused(s.remember(&c, r).await).code,
        ErrorCode::SessionNotFound
    );
    assert!(
        tables(&s).await.artifacts.is_empty(),
        "no artifact from a refusal"
    );
    let kept = s
        .remember(&c, note("p", Some((a.session_id, "a"))))
        .await
        .unwrap();
    let loose = s.remember(&c, note("p", None)).await.unwrap();
    let t = tables(&s).await;
    assert_eq!(t.ledger_size(a.session_id), 1);
    assert_eq!(t.inbox_count(&project()), 2);
    assert_eq!(
        outcomes_after(&s, n0).await,
        [
            "client_key_mismatch",
            "invalid_argument",
            "session_not_found",
            "ok",
            "ok"
        ]
    );
    // The end counts the artifact no session holds.
    let out = s
        .end_session(&c, end_req(a.session_id, "a", "body", 0))
        .await
        .unwrap();
    assert_eq!(out["unattributed_in_window"]["count"], json!(1), "{out}");
    let e = refused(s.remember(&c, note("p", Some((a.session_id, "a")))).await);
    assert_eq!(e.code, ErrorCode::SessionClosed);
    // Acknowledged todos leave the inbox once.
    let ack = TodoAckRequest {
        project: project(),
        artifact_ids: vec![kept.artifact_id, loose.artifact_id],
        note: Some("done".into()),
        digest: "ack".into(),
    };
    let out = s.todo_ack(&c, ack.clone()).await.unwrap();
    assert_eq!((out.acknowledged.len(), out.inbox_count), (2, 0));
    let out = s.todo_ack(&c, ack).await.unwrap();
    assert_eq!(out.already_acknowledged.len(), 2);
}

fn put(kind: DocumentKind, name: &str, body: &str, expected_revision: i64) -> DocumentPut {
    DocumentPut {
        project: project(),
        kind,
        name: name.to_owned(),
        body: body.to_owned(),
        expected_revision,
        digest: format!("put {name} {expected_revision}"),
    }
}

#[tokio::test]
async fn documents_are_compare_and_swap_and_models_are_bounded() {
    let s = store();
    let (c, op) = (agent(), operator());
    let n0 = tables(&s).await.receipts.len();
    let model = put(DocumentKind::MentalModel, "m", "a model", 0);
    let e = refused(s.document_put(&c, model.clone()).await);
    assert_eq!(e.code, ErrorCode::Forbidden);
    let e = refused(
        s.document_put(&c, put(DocumentKind::SyncNote, "named", "x", 0))
            .await,
    );
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let note = s
        .document_put(&c, put(DocumentKind::SyncNote, "", "note", 0))
        .await
        .unwrap();
    assert_eq!(note.revision, 1);
    let e = refused(
        s.document_put(&c, put(DocumentKind::SyncNote, "", "stale", 0))
            .await,
    );
    assert_eq!(e.code, ErrorCode::DocumentConflict);
    assert_eq!(
        outcomes_after(&s, n0).await,
        ["forbidden", "invalid_argument", "ok", "document_conflict"]
    );
    let t = tables(&s).await;
    let held = t.document(&project(), DocumentKind::SyncNote, "");
    assert_eq!((held.body.as_str(), held.revision), ("note", 1));

    for i in 0..MAX_MENTAL_MODELS {
        let m = put(DocumentKind::MentalModel, &format!("m{i}"), "model", 0);
        s.document_put(&op, m).await.unwrap();
    }
    let one_more = put(DocumentKind::MentalModel, "over", "model", 0);
    let e = refused(s.document_put(&op, one_more).await);
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    // Replacing a model's body is always allowed.
    let m0 = put(DocumentKind::MentalModel, "m0", "model, again", 1);
    assert_eq!(s.document_put(&op, m0).await.unwrap().revision, 2);
}

#[tokio::test]
async fn an_elevation_lets_its_session_shrink_the_focus() {
    let s = store();
    let (c, op) = (agent(), operator());
    let a = start(&s, &c, "a", None).await;
    s.end_session(&c, end_req(a.session_id, "a", "0123456789", 0))
        .await
        .unwrap();
    let mine = start(&s, &op, "o", None).await;
    let grant = |target: ElevationTarget, ttl_secs: i64| ElevationRequest {
        target,
        reason: "cleanup".into(),
        ttl_secs,
        max_secs: 900,
        digest: "grant".into(),
    };
    let n0 = tables(&s).await.receipts.len();
    let e = refused(
        s.elevation_grant(&c, grant(ElevationTarget::Session(mine.session_id), 60))
            .await,
    );
    assert_eq!(e.code, ErrorCode::Forbidden);
    let e = refused(
        s.elevation_grant(&op, grant(ElevationTarget::Session(mine.session_id), 0))
            .await,
    );
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let elsewhere = ElevationTarget::Session(a.session_id);
    let e = refused(s.elevation_grant(&op, grant(elsewhere, 60)).await);
    assert_eq!(
        e.code,
        ErrorCode::SessionNotFound,
        "another's session reads as none"
    );
    let e = refused(
        s.elevation_revoke(&op, ElevationId::new_random(), "revoke")
            .await,
    );
    assert_eq!(e.code, ErrorCode::NotFound);
    let granted = s
        .elevation_grant(&op, grant(ElevationTarget::Session(mine.session_id), 60))
        .await
        .unwrap();
    assert_eq!(
        outcomes_after(&s, n0).await,
        [
            "forbidden",
            "invalid_argument",
            "session_not_found",
            "not_found",
            "ok"
        ]
    );

    let mut r = end_req(mine.session_id, "o", "0", 1);
    r.allow_focus_shrink = true;
    redigest(&mut r);
    let out = s.end_session(&op, r).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    let t = tables(&s).await;
    assert_eq!(base(&t), ("0".to_owned(), 2));
    assert!(
        t.receipts.last().unwrap().elevated,
        "the receipt says it was elevated"
    );
    s.elevation_revoke(&op, granted.id, "revoke").await.unwrap();
    assert!(tables(&s).await.elevations[0].1.revoked_at.is_some());
    // Revoked, it no longer counts: granted on a session, revoked before
    // the session's end asks for it.
    let again = start(&s, &op, "o2", None).await;
    let on_again = ElevationTarget::Session(again.session_id);
    let second = s.elevation_grant(&op, grant(on_again, 60)).await.unwrap();
    s.elevation_revoke(&op, second.id, "revoke").await.unwrap();
    let mut r = end_req(again.session_id, "o2", "", 2);
    r.next_focus = "x".into();
    r.allow_focus_shrink = true;
    redigest(&mut r);
    let code = refused(s.end_session(&op, r).await).code;
    assert_eq!(code, ErrorCode::FocusShrinkOverrideRefused);
}

#[tokio::test]
async fn connections_past_their_caps_are_refused_inside_the_write() {
    let s = store();
    let c = agent();
    let caps = ConnectionCaps {
        per_credential: 2,
        per_tenant: 3,
    };
    s.connection_open(&c, "c1", None, caps).await.unwrap();
    s.connection_open(&c, "c2", None, caps).await.unwrap();
    let e = refused(s.connection_open(&c, "c3", None, caps).await);
    assert_eq!(e.code, ErrorCode::RateLimited);
    s.connection_open(&operator(), "c3", None, caps)
        .await
        .unwrap();
    let e = refused(
        s.connection_open(&caller("x", Role::Agent), "c4", None, caps)
            .await,
    );
    assert_eq!(e.code, ErrorCode::RateLimited, "the tenant's cap");
    let t = tables(&s).await;
    assert_eq!(t.connections.len(), 3);
    assert_eq!(t.sessions.len(), 3, "one tracer each, none for a refusal");
}

#[tokio::test]
async fn only_an_operator_deletes_a_project_and_its_receipts_stay() {
    let s = store();
    let (c, op) = (agent(), operator());
    let a = start(&s, &c, "a", None).await;
    s.end_session(&c, end_req(a.session_id, "a", "body", 0))
        .await
        .unwrap();
    let (delete, reserved) = (project(), ProjectKey::parse("_mcp").unwrap());
    let e = refused(
        brain_core::flow::project_delete(s.write(&c.tenant).await.unwrap(), &c, &delete, "d").await,
    );
    assert_eq!(e.code, ErrorCode::Forbidden);
    let tx = s.write(&op.tenant).await.unwrap();
    let e = refused(brain_core::flow::project_delete(tx, &op, &reserved, "d").await);
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let tx = s.write(&op.tenant).await.unwrap();
    brain_core::flow::project_delete(tx, &op, &delete, "d")
        .await
        .unwrap();
    let tx = s.write(&op.tenant).await.unwrap();
    let e = refused(brain_core::flow::project_delete(tx, &op, &delete, "d").await);
    assert_eq!(e.code, ErrorCode::NotFound);
    let t = tables(&s).await;
    assert!(t.sessions.is_empty() && t.focus.is_empty() && t.history.is_empty());
    let last: Vec<(&str, &str)> = t
        .receipts
        .iter()
        .rev()
        .take(4)
        .map(|r| (r.tool.as_str(), r.outcome.as_str()))
        .collect();
    assert_eq!(
        last,
        [
            ("project_deleted", "not_found"),
            ("project_deleted", "ok"),
            ("project_deleted", "invalid_argument"),
            ("project_deleted", "forbidden"),
        ]
    );
    assert_eq!(t.receipts.len(), 6, "the start's and end's receipts stay");
}

#[tokio::test]
async fn a_dropped_transaction_writes_nothing() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    {
        use brain_core::flow::WriteTx;
        let mut tx = s.write(&c.tenant).await.unwrap();
        tx.touch_session(a.session_id, brain_core::model::now_micros(), None)
            .await
            .unwrap();
        tx.provision(Some(&ProjectKey::parse("never").unwrap()))
            .await
            .unwrap();
    }
    let t = tables(&s).await;
    assert_eq!(
        t.sessions[&a.session_id].0.last_activity_at,
        a.last_activity_at
    );
    assert!(!t.projects.contains(&ProjectKey::parse("never").unwrap()));
}

#[tokio::test]
async fn an_end_that_keeps_the_focus_writes_no_revision() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    s.end_session(&c, end_req(a.session_id, "a", "the plan", 0))
        .await
        .unwrap();
    let b = start(&s, &c, "b", None).await;
    // Stale and blank: keep_focus ends on the body as it stands.
    let mut r = end_req(b.session_id, "b", "", 0);
    r.keep_focus = true;
    redigest(&mut r);
    let out = s.end_session(&c, r).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("unchanged"));
    let t = tables(&s).await;
    assert_eq!(base(&t), ("the plan".to_owned(), 1));
    assert_eq!(status(&t, b.session_id), SessionStatus::Ended);
}

fn profile_end(id: SessionId, key: &str) -> EndRequest {
    let mut r = end_req(id, key, "", 0);
    r.keep_focus = true;
    r.door = Door::Profile;
    r.digest = request_digest(&json!({"phase": "end", "session_id": id.to_string()}));
    r
}

fn bodies(tag: &str) -> Vec<(DocumentKind, String)> {
    [DocumentKind::ExecutiveState, DocumentKind::Critique]
        .into_iter()
        .map(|k| (k, format!("{tag} {}", k.as_str())))
        .collect()
}

#[tokio::test]
async fn a_profile_end_writes_its_documents_and_close_in_one_receipt() {
    let s = store();
    let c = agent();
    let a = start(&s, &c, "a", None).await;
    let skip = tables(&s).await.receipts.len();
    // Another caller's key: refused with its receipt, no document written.
    let e = refused(
        s.end_with_documents(&c, profile_end(a.session_id, "b"), bodies("x"))
            .await,
    );
    assert_eq!(e.code, ErrorCode::ClientKeyMismatch);
    let t = tables(&s).await;
    assert!(t.documents.is_empty());
    assert_eq!(status(&t, a.session_id), SessionStatus::Open);
    assert_eq!(outcomes_after(&s, skip).await, ["client_key_mismatch"]);

    let out = s
        .end_with_documents(&c, profile_end(a.session_id, "a"), bodies("first"))
        .await
        .unwrap();
    assert!(out.closed.is_some());
    assert_eq!(out.revisions, [1, 1]);
    let t = tables(&s).await;
    assert_eq!(status(&t, a.session_id), SessionStatus::Ended);
    assert_eq!(t.documents.len(), 2);
    assert_eq!(base(&t), (String::new(), 0), "the focus is kept");
    assert_eq!(t.receipts.len(), skip + 2, "one receipt for the whole end");
    assert_eq!(t.receipts[skip + 1].tool, "brain_session");

    // A second end replaces the documents only, with one more receipt.
    let again = s
        .end_with_documents(&c, profile_end(a.session_id, "a"), bodies("second"))
        .await
        .unwrap();
    assert!(again.closed.is_none());
    assert_eq!(again.revisions, [2, 2]);
    let t = tables(&s).await;
    assert_eq!(t.receipts.len(), skip + 3);
    let critique = t
        .documents
        .values()
        .find(|d| d.kind == DocumentKind::Critique)
        .unwrap();
    assert_eq!(critique.body, "second critique");
}

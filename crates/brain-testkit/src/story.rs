//! The behaviour story: what every `Store` must do, written once against
//! `dyn Store` so each backend runs the same assertions (SPEC §2.2–2.7, §1).

use std::sync::Arc;

use brain_core::digest::request_digest;
use brain_core::error::{ErrorCode, StoreError};
use brain_core::ids::{ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use brain_core::model::{ArtifactKind, Caller, CredentialKind, Role, SessionStatus};
use brain_core::receipt::verify_chain;
use brain_core::requests::{
    AbandonRequest, BindRequest, EndRequest, RelayRequest, RememberRequest, ResumeRequest,
    StartRequest,
};
use brain_core::store::{SessionBriefing, Store};
use serde_json::{Value, json};

pub fn caller(tenant: &str, sub: &str, role: Role) -> Caller {
    Caller {
        tenant: TenantId::parse(tenant).unwrap(),
        kind: CredentialKind::Jwt,
        credential_id: format!("brain|{sub}"),
        subject: sub.to_owned(),
        role,
        connection_id: None,
        token_id: None,
        tracer_session: None,
    }
}

pub fn agent(tenant: &str) -> Caller {
    caller(tenant, "agent-sub", Role::Agent)
}

pub async fn start(
    s: &dyn Store,
    c: &Caller,
    project: &str,
    key: &str,
    slot: Option<&str>,
) -> SessionBriefing {
    s.start_session(
        c,
        StartRequest {
            project: ProjectKey::parse(project).unwrap(),
            client_key: ClientKey::parse("client_key", key).unwrap(),
            slot: slot.map(|x| SlotName::parse(x).unwrap()),
            digest: request_digest(&json!({"project": project, "client_key": key, "slot": slot})),
        },
    )
    .await
    .unwrap()
}

pub fn end_req(id: SessionId, key: &str, next_focus: &str, rev: i64) -> EndRequest {
    let mut r = EndRequest {
        session_id: id,
        expected_client_key: key.to_owned(),
        summary: "summary of the work".to_owned(),
        next_focus: next_focus.to_owned(),
        expected_focus_revision: rev,
        nothing_to_capture_reason: None,
        allow_focus_shrink: false,
        dry_run: false,
        keep_focus: false,
        door: brain_core::rules::Door::Brain,
        digest: String::new(),
        merge: Default::default(),
    };
    redigest(&mut r);
    r
}

/// Recompute the replay digest after a field was changed.
pub fn redigest(r: &mut EndRequest) {
    r.digest = request_digest(&json!({
        "session_id": r.session_id.to_string(),
        "expected_client_key": r.expected_client_key,
        "summary": r.summary,
        "next_focus": r.next_focus,
        "expected_focus_revision": r.expected_focus_revision,
        "nothing_to_capture_reason": r.nothing_to_capture_reason,
        "allow_focus_shrink": r.allow_focus_shrink,
    }));
}

pub fn code(e: StoreError) -> ErrorCode {
    match e {
        StoreError::Domain(d) => d.code,
        StoreError::Backend(b) => panic!("backend error: {b}"),
        StoreError::Driver(d) => panic!("driver error: {d}"),
        StoreError::MergeNeeded(_) => panic!("a merge stop left the store"),
    }
}

async fn receipt_count(s: &dyn Store, c: &Caller) -> usize {
    let r = s.receipts(&c.tenant).await.unwrap();
    assert_eq!(verify_chain(&r), Ok(r.len()), "the chain must verify");
    // Page by page (two receipts a page), against the tip, the same count.
    let (seq, hash) = s.ledger_tip(&c.tenant).await.unwrap();
    let paged = brain_core::store::verify_receipts(s, &c.tenant, 2)
        .await
        .unwrap();
    assert_eq!(
        paged,
        Ok((r.len(), seq, hash)),
        "the paged check must agree"
    );
    r.len()
}

async fn base(s: &dyn Store, c: &Caller, project: &str) -> (String, i64) {
    let f = s
        .focus_get(&c.tenant, &ProjectKey::parse(project).unwrap(), None)
        .await
        .unwrap();
    (f.body, f.revision)
}

fn tenant() -> String {
    format!("t{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

// ------------------------------------------------------------------------

pub async fn start_opens_a_session_with_a_receipt(s: &dyn Store) {
    let c = agent(&tenant());
    let b = start(s, &c, "proj", "client-a", None).await;
    assert_eq!(b.session.status, SessionStatus::Open);
    assert_eq!(b.session.started_focus_revision, 0);
    assert_eq!(b.briefing.base_focus.revision, 0);
    assert_eq!(b.briefing.open_sessions, 1);
    assert!(b.briefing.recovery.is_none());
    let receipts = s.receipts(&c.tenant).await.unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0].seq, 1);
    assert_eq!(receipts[0].tool, "brain_session_start");
    assert_eq!(receipts[0].outcome, "ok");
    // A second start by the same client reports the first as recovery.
    let b2 = start(s, &c, "proj", "client-a", None).await;
    let rec = b2.briefing.recovery.expect("recovery");
    assert_eq!(rec.session_id, b.session.session_id);
    assert!(!rec.idle);
    assert_eq!(b2.briefing.open_sessions, 2);
}

pub async fn end_applies_then_stale_revision_conflicts(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    let b = start(s, &c, "p", "b", None).await.session;
    let out = s
        .end_session(&c, end_req(a.session_id, "a", "focus one", 0))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    assert_eq!(out["session"]["status"], json!("ended"));
    assert_eq!(out["focus_revision_at_end"], json!(1));
    assert_eq!(out["replayed"], json!(false));
    assert_eq!(base(s, &c, "p").await, ("focus one".to_owned(), 1));
    let before = receipt_count(s, &c).await;
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "focus two", 0))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("conflict"));
    assert_eq!(out["session"]["status"], json!("conflicted"));
    // Each body once: the current one is focus_at_end's, so current_focus is null.
    assert_eq!(out["focus_at_end"]["body"], json!("focus one"));
    assert_eq!(out["current_focus"], Value::Null);
    assert_eq!(out["current_focus_revision"], json!(1));
    assert!(out["focus_diff"].as_str().unwrap().contains("+focus one"));
    assert_eq!(out["session"]["next_focus"], json!("focus two"));
    assert_eq!(
        base(s, &c, "p").await,
        ("focus one".to_owned(), 1),
        "no focus written"
    );
    assert_eq!(receipt_count(s, &c).await, before + 1);
}

pub async fn identical_body_is_unchanged(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    s.end_session(&c, end_req(a.session_id, "a", "same", 0))
        .await
        .unwrap();
    let b = start(s, &c, "p", "b", None).await.session;
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "same", 1))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("unchanged"));
    assert_eq!(out["session"]["status"], json!("ended"));
    assert_eq!(base(s, &c, "p").await.1, 1);
}

pub async fn checks_run_in_order_and_refusals_write_only_a_receipt(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    s.end_session(&c, end_req(a.session_id, "a", "0123456789", 0))
        .await
        .unwrap();
    let b = start(s, &c, "p", "b", None).await.session;
    let n0 = receipt_count(s, &c).await;

    // 1. unknown session
    let e = s
        .end_session(&c, end_req(SessionId::new_random(), "b", "x", 1))
        .await;
    assert_eq!(code(e.unwrap_err()), ErrorCode::SessionNotFound);
    // 2. wrong key — checked before blankness and shrink
    let mut r = end_req(b.session_id, "wrong", "", 99);
    r.summary = " ".into();
    redigest(&mut r);
    assert_eq!(
        code(s.end_session(&c, r).await.unwrap_err()),
        ErrorCode::ClientKeyMismatch
    );
    // 4. blank reason refused
    let mut r = end_req(b.session_id, "b", "0123456789", 1);
    r.nothing_to_capture_reason = Some("  ".into());
    redigest(&mut r);
    assert_eq!(
        code(s.end_session(&c, r).await.unwrap_err()),
        ErrorCode::InvalidArgument
    );
    // 5. override without authority, even when nothing shrinks
    let mut r = end_req(b.session_id, "b", "0123456789 and more", 1);
    r.allow_focus_shrink = true;
    redigest(&mut r);
    assert_eq!(
        code(s.end_session(&c, r).await.unwrap_err()),
        ErrorCode::FocusShrinkOverrideRefused
    );
    // 6. shrink guard: 6 of 10 refused, before the (stale) revision decides
    // anything; the refusal says the revision is stale too, and which is current
    match s
        .end_session(&c, end_req(b.session_id, "b", "012345", 0))
        .await
    {
        Err(StoreError::Domain(d)) => {
            assert_eq!(d.code, ErrorCode::BaseFocusShrink);
            assert_eq!(
                d.details,
                json!({"current": 10, "proposed": 6, "floor": 7, "stale": true, "current_revision": 1})
            );
        }
        other => panic!("{other:?}"),
    }
    // Every refusal wrote exactly its receipt and nothing else.
    assert_eq!(receipt_count(s, &c).await, n0 + 5);
    let outcomes: Vec<String> = s
        .receipts(&c.tenant)
        .await
        .unwrap()
        .into_iter()
        .skip(n0)
        .map(|r| r.outcome)
        .collect();
    assert_eq!(
        outcomes,
        [
            "session_not_found",
            "client_key_mismatch",
            "invalid_argument",
            "focus_shrink_override_refused",
            "base_focus_shrink"
        ]
    );
    let detail = s.session_get(&c.tenant, b.session_id).await.unwrap();
    assert_eq!(
        detail.session.status,
        SessionStatus::Open,
        "the session stays open"
    );
    assert_eq!(base(s, &c, "p").await, ("0123456789".to_owned(), 1));
    // 7 passes at exactly the floor, with an absent reason.
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "0123456", 1))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
}

pub async fn replay_answers_the_stored_result_and_writes_nothing(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    let req = end_req(a.session_id, "a", "first focus", 0);
    let first = s.end_session(&c, req.clone()).await.unwrap();
    // Someone else moves the focus on.
    let b = start(s, &c, "p", "b", None).await.session;
    s.end_session(&c, end_req(b.session_id, "b", "second focus", 1))
        .await
        .unwrap();
    let n = receipt_count(s, &c).await;
    let again = s.end_session(&c, req.clone()).await.unwrap();
    assert_eq!(again["replayed"], json!(true));
    assert_eq!(again["focus_outcome"], first["focus_outcome"]);
    assert_eq!(again["focus_revision_at_end"], json!(1));
    assert_eq!(again["current_focus"], json!("second focus"));
    assert_eq!(again["current_focus_revision"], json!(2));
    assert_eq!(receipt_count(s, &c).await, n, "a replay writes no receipt");
    // A different call on the closed session is session_closed, with a receipt.
    let mut other = req.clone();
    other.summary = "another summary".into();
    redigest(&mut other);
    match s.end_session(&c, other).await {
        Err(StoreError::Domain(d)) => {
            assert_eq!(d.code, ErrorCode::SessionClosed);
            assert_eq!(d.details["status"], json!("ended"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(receipt_count(s, &c).await, n + 1);
}

pub async fn bound_sessions_compare_the_slot_revision(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    s.end_session(&c, end_req(a.session_id, "a", "base body", 0))
        .await
        .unwrap();
    let b = start(s, &c, "p", "b", None).await.session;
    assert_eq!(b.started_focus_revision, 1);
    let bound = s
        .bind_session(
            &c,
            BindRequest {
                session_id: b.session_id,
                expected_client_key: "b".into(),
                slot: SlotName::parse("ui").unwrap(),
                digest: "bind".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(bound.slot.revision, 0);
    // Passing started_focus_revision (1) instead of the slot revision (0): conflict.
    let out = s
        .end_session(&c, end_req(b.session_id, "b", "slot body", 1))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("conflict"));
    let slot = s
        .focus_get(
            &c.tenant,
            &ProjectKey::parse("p").unwrap(),
            Some(&SlotName::parse("ui").unwrap()),
        )
        .await
        .unwrap();
    assert_eq!((slot.body.as_str(), slot.revision), ("", 0));
    // The right revision writes the slot, not the base.
    let d = start(s, &c, "p", "d", Some("ui")).await;
    assert_eq!(d.slot.as_ref().map(|v| v.revision), Some(0));
    let out = s
        .end_session(&c, end_req(d.session.session_id, "d", "slot body", 0))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    assert_eq!(base(s, &c, "p").await, ("base body".to_owned(), 1));
}

pub async fn bind_rules(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    let bind = |slot: &str| BindRequest {
        session_id: a.session_id,
        expected_client_key: "a".into(),
        slot: SlotName::parse(slot).unwrap(),
        digest: format!("bind-{slot}"),
    };
    s.bind_session(&c, bind("ui")).await.unwrap();
    let again = s.bind_session(&c, bind("ui")).await.unwrap();
    assert_eq!(
        again.session.bound_slot.as_ref().map(|x| x.as_str()),
        Some("ui")
    );
    assert_eq!(
        code(s.bind_session(&c, bind("api")).await.unwrap_err()),
        ErrorCode::AlreadyBound
    );
}

pub async fn window_counts_are_right(s: &dyn Store) {
    let c = agent(&tenant());
    let remember = |session: Option<(SessionId, &str)>, text: &str| RememberRequest {
        project: ProjectKey::parse("p").unwrap(),
        kind: ArtifactKind::Note,
        text: text.to_owned(),
        tags: vec![],
        session: session.map(|(id, k)| (id, k.to_owned())),
        digest: format!("rem-{text}"),
    };
    // Before the session opens: outside the window.
    s.remember(&c, remember(None, "before")).await.unwrap();
    let a = start(s, &c, "p", "a", None).await.session;
    let _other = start(s, &c, "p", "b", None).await.session;
    let _third = start(s, &c, "other-project", "c", None).await.session;
    let u1 = s.remember(&c, remember(None, "loose one")).await.unwrap();
    let u2 = s.remember(&c, remember(None, "loose two")).await.unwrap();
    let mine = s
        .remember(&c, remember(Some((a.session_id, "a")), "mine"))
        .await
        .unwrap();
    assert_eq!(mine.session_id, Some(a.session_id));
    let out = s
        .end_session(&c, end_req(a.session_id, "a", "next", 0))
        .await
        .unwrap();
    assert_eq!(out["unattributed_in_window"]["count"], json!(2));
    let ids: Vec<Value> = vec![
        json!(u1.artifact_id.to_string()),
        json!(u2.artifact_id.to_string()),
    ];
    assert_eq!(out["unattributed_in_window"]["ids"], Value::Array(ids));
    assert_eq!(out["remaining_open_session_count"], json!(1));
    let detail = s.session_get(&c.tenant, a.session_id).await.unwrap();
    assert_eq!(detail.ledger_size, 1);
    // Remembering into a closed session is refused.
    let e = s
        .remember(&c, remember(Some((a.session_id, "a")), "late"))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::SessionClosed);
}

pub async fn dry_run_writes_nothing(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    let n = receipt_count(s, &c).await;
    let mut r = end_req(a.session_id, "a", "next", 0);
    r.dry_run = true;
    let out = s.end_session(&c, r.clone()).await.unwrap();
    assert_eq!(out["dry_run"], json!(true));
    assert_eq!(out["would"], json!("applied"));
    r.next_focus = " ".into();
    assert_eq!(
        code(s.end_session(&c, r).await.unwrap_err()),
        ErrorCode::InvalidArgument
    );
    assert_eq!(receipt_count(s, &c).await, n);
    assert_eq!(base(s, &c, "p").await, (String::new(), 0));
    let detail = s.session_get(&c.tenant, a.session_id).await.unwrap();
    assert_eq!(detail.session.status, SessionStatus::Open);
}

pub async fn relay_hands_the_slot_over(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", Some("ui")).await.session;
    let relay = |id: SessionId, key: &str, next: &str, rev: i64, to: &str| RelayRequest {
        end: end_req(id, key, next, rev),
        to_client_key: to.to_owned(),
    };
    // A dry run answers as the relay will: the slot it leaves, the count it leaves open.
    let mut dry = relay(a.session_id, "a", "0123456789", 0, "b");
    dry.end.dry_run = true;
    redigest(&mut dry.end);
    let preview = s.relay_session(&c, dry).await.unwrap();
    let out = s
        .relay_session(&c, relay(a.session_id, "a", "0123456789", 0, "b"))
        .await
        .unwrap();
    assert_eq!(preview["would"], json!("applied"));
    assert_eq!(preview["slot"], out["slot"]);
    assert_eq!(
        preview["remaining_open_session_count"],
        out["remaining_open_session_count"]
    );
    assert_eq!(out["session"]["status"], json!("relayed"));
    assert_eq!(out["slot"]["revision"], json!(1));
    // Each body once: the slot carries what end's focus_at_end would.
    assert_eq!(out["slot"]["body"], json!("0123456789"));
    assert!(out.get("focus_at_end").is_none(), "{out}");
    assert_eq!(out["new_session"]["client_key"], json!("b"));
    assert_eq!(out["new_session"]["bound_slot"], json!("ui"));
    // The session the relay opened is one of those left open.
    assert_eq!(out["remaining_open_session_count"], json!(1));
    let b_id = SessionId::parse(out["new_session"]["session_id"].as_str().unwrap()).unwrap();
    // An agent's relay may not override the guard…
    let mut shrink = relay(b_id, "b", "01", 1, "c");
    shrink.end.allow_focus_shrink = true;
    redigest(&mut shrink.end);
    assert_eq!(
        code(s.relay_session(&c, shrink.clone()).await.unwrap_err()),
        ErrorCode::FocusShrinkOverrideRefused
    );
    // …an operator relay may, and its receipt says so.
    let op = caller(c.tenant.as_str(), "op", Role::Operator);
    let out = s.relay_session(&op, shrink).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    let last = s.receipts(&c.tenant).await.unwrap().pop().unwrap();
    assert!(last.elevated);
    // Unbound sessions cannot relay; stale revisions open no new session.
    let u = start(s, &c, "p", "u", None).await.session;
    assert_eq!(
        code(
            s.relay_session(&c, relay(u.session_id, "u", "x", 0, "z"))
                .await
                .unwrap_err()
        ),
        ErrorCode::RelayRequiresSlot
    );
    let cc = SessionId::parse(out["new_session"]["session_id"].as_str().unwrap()).unwrap();
    let out = s
        .relay_session(&c, relay(cc, "c", "stale body", 0, "d"))
        .await
        .unwrap();
    assert_eq!(out["focus_outcome"], json!("conflict"));
    assert_eq!(out["new_session"], Value::Null);
}

pub async fn abandon_needs_consent_and_replays(s: &dyn Store) {
    let c = agent(&tenant());
    let a = start(s, &c, "p", "a", None).await.session;
    let req = |confirm: bool| AbandonRequest {
        session_id: a.session_id,
        expected_client_key: "a".into(),
        reason: "wrong project".into(),
        confirm,
        dry_run: false,
        digest: format!("abandon-{confirm}"),
    };
    assert_eq!(
        code(s.abandon_session(&c, req(false)).await.unwrap_err()),
        ErrorCode::ConfirmRequired
    );
    let out = s.abandon_session(&c, req(true)).await.unwrap();
    assert_eq!(out["session"]["status"], json!("abandoned"));
    let n = receipt_count(s, &c).await;
    let again = s.abandon_session(&c, req(true)).await.unwrap();
    assert_eq!(again["replayed"], json!(true));
    assert_eq!(receipt_count(s, &c).await, n);
    assert_eq!(base(s, &c, "p").await.1, 0, "no focus write");
    let e = s
        .resume_session(
            &c,
            ResumeRequest {
                session_id: a.session_id,
                expected_client_key: "a".into(),
                door: brain_core::rules::Door::Brain,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::SessionClosed);
}

pub async fn tenants_are_walled(s: &dyn Store) {
    let ta = agent(&tenant());
    let tb = agent(&tenant());
    let a = start(s, &ta, "shared-name", "k", None).await.session;
    // Another tenant's id is answered exactly as an unknown id.
    let e = s.session_get(&tb.tenant, a.session_id).await.unwrap_err();
    assert_eq!(code(e), ErrorCode::SessionNotFound);
    let e = s
        .end_session(&tb, end_req(a.session_id, "k", "x", 0))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::SessionNotFound);
    // The same project name in two tenants is two projects.
    let b = start(s, &tb, "shared-name", "k", None).await.session;
    s.end_session(&tb, end_req(b.session_id, "k", "tenant b focus", 0))
        .await
        .unwrap();
    assert_eq!(base(s, &tb, "shared-name").await.1, 1);
    assert_eq!(base(s, &ta, "shared-name").await, (String::new(), 0));
    // The session in tenant A is untouched and its chain is its own.
    assert_eq!(
        s.session_get(&ta.tenant, a.session_id)
            .await
            .unwrap()
            .session
            .status,
        SessionStatus::Open
    );
    assert_eq!(receipt_count(s, &ta).await, 1);
}

/// A client on the sessionless protocol revision has no connection: its
/// elevation names its brain session, and counts for that session only.
pub async fn sessionless_elevation_authorizes_its_session(s: &dyn Store) {
    use brain_core::operators::{ElevationRequest, ElevationTarget};
    let op = caller(&tenant(), "op", Role::Operator);
    let a = start(s, &op, "p", "a", None).await.session;
    s.end_session(&op, end_req(a.session_id, "a", "0123456789", 0))
        .await
        .unwrap();
    let b = start(s, &op, "p", "b", None).await.session;
    let other = start(s, &op, "p", "o", None).await.session;
    let e = s
        .elevation_grant(
            &op,
            ElevationRequest {
                target: ElevationTarget::Session(b.session_id),
                reason: "trim".into(),
                ttl_secs: 60,
                max_secs: 3600,
                digest: "g".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(e.session_id, Some(b.session_id));
    let shrink = |id, key: &str| {
        let mut r = end_req(id, key, "01", 1);
        r.allow_focus_shrink = true;
        redigest(&mut r);
        r
    };
    assert_eq!(
        code(
            s.end_session(&op, shrink(other.session_id, "o"))
                .await
                .unwrap_err()
        ),
        ErrorCode::FocusShrinkOverrideRefused,
        "another session of the same credential"
    );
    let out = s.end_session(&op, shrink(b.session_id, "b")).await.unwrap();
    assert_eq!(out["focus_outcome"], json!("applied"));
    assert!(
        s.receipts(&op.tenant)
            .await
            .unwrap()
            .iter()
            .any(|r| r.elevated)
    );
    // A revoked elevation is worth nothing.
    s.elevation_revoke(&op, e.id, "r").await.unwrap();
    assert!(s.elevation_list(&op).await.unwrap().is_empty());
}

fn remember_req(project: &str, kind: ArtifactKind, text: &str) -> RememberRequest {
    RememberRequest {
        project: ProjectKey::parse(project).unwrap(),
        kind,
        text: text.to_owned(),
        tags: vec![],
        session: None,
        digest: format!("rem-{text}"),
    }
}

fn recall_q(
    project: &str,
    query: &str,
    kinds: Vec<ArtifactKind>,
    limit: i64,
    offset: i64,
) -> brain_core::store::RecallQuery {
    brain_core::store::RecallQuery {
        project: ProjectKey::parse(project).unwrap(),
        tags: Vec::new(),
        query: Some(query.to_owned()),
        inbox: false,
        session_id: None,
        before: None,
        kinds,
        limit,
        offset,
    }
}

pub async fn recall_is_ranked_filtered_paged_and_multilingual(s: &dyn Store) {
    let c = agent(&tenant());
    for (kind, text) in [
        (
            ArtifactKind::Decision,
            "We chose PostgreSQL for the ledger because of row locks",
        ),
        (
            ArtifactKind::Fact,
            "The ledger tip is locked last; the ledger never forks",
        ),
        (ArtifactKind::Note, "Lunch was good"),
        (ArtifactKind::Fact, "日本語 の テキスト も 検索 できる"),
        (ArtifactKind::Note, "Русский текст тоже находится"),
        (ArtifactKind::Todo, "migrate the ledger docs"),
    ] {
        s.remember(&c, remember_req("p", kind, text)).await.unwrap();
    }
    s.remember(
        &c,
        remember_req("other", ArtifactKind::Fact, "ledger in another project"),
    )
    .await
    .unwrap();
    let hits = s
        .recall(&c.tenant, &recall_q("p", "ledger", vec![], 10, 0))
        .await
        .unwrap();
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].rank >= w[1].rank), "ranked");
    // Ranks are relative to the best match: 1.0 first, all within 0..=1.
    assert!((hits[0].rank - 1.0).abs() < 1e-6, "{hits:?}");
    assert!(
        hits.iter().all(|h| (0.0..=1.0 + 1e-6).contains(&h.rank)),
        "{hits:?}"
    );
    let pos = |needle: &str| hits.iter().position(|h| h.artifact.text.contains(needle));
    assert!(
        pos("never forks") < pos("We chose"),
        "two matches outrank one in a longer text: {hits:?}"
    );
    assert!(
        hits.iter()
            .all(|h| h.snippet.contains("«") && h.snippet.to_lowercase().contains("ledger"))
    );
    let facts = s
        .recall(
            &c.tenant,
            &recall_q("p", "ledger", vec![ArtifactKind::Fact], 10, 0),
        )
        .await
        .unwrap();
    assert_eq!(facts.len(), 1);
    let page1 = s
        .recall(&c.tenant, &recall_q("p", "ledger", vec![], 2, 0))
        .await
        .unwrap();
    let page2 = s
        .recall(&c.tenant, &recall_q("p", "ledger", vec![], 2, 2))
        .await
        .unwrap();
    assert_eq!((page1.len(), page2.len()), (2, 1));
    assert!(
        !page1
            .iter()
            .any(|h| h.artifact.artifact_id == page2[0].artifact.artifact_id)
    );
    assert_eq!(
        s.recall(&c.tenant, &recall_q("p", "текст", vec![], 10, 0))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.recall(&c.tenant, &recall_q("p", "検索", vec![], 10, 0))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        s.recall(
            &c.tenant,
            &recall_q("p", "ledger -postgresql", vec![], 10, 0)
        )
        .await
        .unwrap()
        .len(),
        2
    );
    assert_eq!(
        s.recall(&c.tenant, &recall_q("p", "lunch or forks", vec![], 10, 0))
            .await
            .unwrap()
            .len(),
        2
    );
    for odd in [
        "\"unbalanced",
        "*",
        "-",
        "OR",
        "a AND (",
        "NEAR(",
        "'; DROP TABLE artifacts; --",
        "",
    ] {
        s.recall(&c.tenant, &recall_q("p", odd, vec![], 10, 0))
            .await
            .unwrap();
    }
    // Another tenant finds nothing.
    let other = agent(&tenant());
    assert!(
        s.recall(&other.tenant, &recall_q("p", "ledger", vec![], 10, 0))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn documents_are_compare_and_swap(s: &dyn Store) {
    use brain_core::memory::{DocumentKind, DocumentPut};
    let c = agent(&tenant());
    let put = |kind, name: &str, body: &str, rev| DocumentPut {
        project: ProjectKey::parse("p").unwrap(),
        kind,
        name: name.to_owned(),
        body: body.to_owned(),
        expected_revision: rev,
        digest: "d".into(),
    };
    let state = r#"{"objective":"ship","missions":["ledger"],"pending_decisions":[]}"#;
    let d = s
        .document_put(&c, put(DocumentKind::ExecutiveState, "", state, 0))
        .await
        .unwrap();
    assert_eq!(d.revision, 1);
    let n = receipt_count(s, &c).await;
    let e = s
        .document_put(&c, put(DocumentKind::ExecutiveState, "", state, 0))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::DocumentConflict);
    let e = s
        .document_put(&c, put(DocumentKind::ExecutiveState, "", "{}", 1))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::InvalidArgument);
    let e = s
        .document_put(&c, put(DocumentKind::MentalModel, "m", "body", 0))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::Forbidden);
    assert_eq!(
        receipt_count(s, &c).await,
        n + 3,
        "each refusal has its receipt"
    );
    let op = caller(c.tenant.as_str(), "op", Role::Operator);
    s.document_put(&op, put(DocumentKind::MentalModel, "m", "a model", 0))
        .await
        .unwrap();
    s.document_put(&c, put(DocumentKind::SyncNote, "", "hello team", 0))
        .await
        .unwrap();
    let got = s
        .document_get(
            &c.tenant,
            &ProjectKey::parse("p").unwrap(),
            DocumentKind::ExecutiveState,
            "",
        )
        .await
        .unwrap();
    assert_eq!((got.revision, got.body.as_str()), (1, state));
    let empty = s
        .document_get(
            &c.tenant,
            &ProjectKey::parse("p").unwrap(),
            DocumentKind::Critique,
            "",
        )
        .await
        .unwrap();
    assert_eq!(empty.revision, 0);
    // The briefing carries them.
    s.remember(
        &c,
        remember_req("p", ArtifactKind::Todo, "fix the ledger index"),
    )
    .await
    .unwrap();
    s.remember(
        &c,
        remember_req("p", ArtifactKind::Fact, "the ledger is linear"),
    )
    .await
    .unwrap();
    let b = start(s, &c, "p", "k", None).await.briefing;
    assert_eq!(
        b.executive_state.as_ref().map(|v| v["objective"].clone()),
        Some(json!("ship"))
    );
    assert_eq!(b.recall.len(), 1);
    assert_eq!(b.recall[0].mission, "ledger");
    assert_eq!(b.recall[0].artifacts.len(), 2);
    assert_eq!(b.inbox_count, 1);
    assert_eq!(b.sync_note.as_deref(), Some("hello team"));
    assert_eq!(b.mental_models.len(), 1);
    assert!(b.brief.is_none());
}

pub async fn history_and_lists_page_newest_first(s: &dyn Store) {
    use brain_core::store::{ReceiptQuery, SessionListQuery};
    let c = agent(&tenant());
    for i in 0..3 {
        let a = start(s, &c, "p", &format!("k{i}"), None).await.session;
        s.end_session(
            &c,
            end_req(a.session_id, &format!("k{i}"), &format!("focus {i}"), i),
        )
        .await
        .unwrap();
    }
    let p = ProjectKey::parse("p").unwrap();
    let h = s.focus_history(&c.tenant, &p, None, None, 2).await.unwrap();
    assert_eq!(
        h.iter().map(|e| e.revision).collect::<Vec<_>>(),
        [3, 2, 1],
        "limit + 1 rows"
    );
    assert_eq!(h[0].body, "focus 2");
    let older = s
        .focus_history(&c.tenant, &p, None, Some(2), 2)
        .await
        .unwrap();
    assert_eq!(older.iter().map(|e| e.revision).collect::<Vec<_>>(), [1]);
    // Keyset paging is stable while new sessions arrive.
    let q = |after, status| SessionListQuery {
        project: p.clone(),
        status,
        after,
        from: None,
        limit: 2,
        slot: None,
        client_key: None,
    };
    let page1 = s.session_list(&c.tenant, &q(None, None)).await.unwrap();
    assert_eq!(page1.len(), 2);
    start(s, &c, "p", "newcomer", None).await;
    let last = &page1[1].session;
    let page2 = s
        .session_list(&c.tenant, &q(Some((last.opened_at, last.session_id)), None))
        .await
        .unwrap();
    assert_eq!(page2.len(), 1);
    assert!(
        !page1
            .iter()
            .any(|d| d.session.session_id == page2[0].session.session_id)
    );
    let open = s
        .session_list(&c.tenant, &q(None, Some(SessionStatus::Open)))
        .await
        .unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].session.client_key.as_str(), "newcomer");
    // Receipts: filtered, oldest first, after a seq.
    let all = s
        .receipts_page(
            &c.tenant,
            &ReceiptQuery {
                project: None,
                session_id: None,
                after_seq: 0,
                before_seq: None,
                until_seq: None,
                limit: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 7);
    let tail = s
        .receipts_page(
            &c.tenant,
            &ReceiptQuery {
                project: None,
                session_id: None,
                after_seq: 5,
                before_seq: None,
                until_seq: None,
                limit: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(tail.iter().map(|r| r.seq).collect::<Vec<_>>(), [6, 7]);
    // Newest first below a seq: the page an auditor reads first.
    let newest = s
        .receipts_page(
            &c.tenant,
            &ReceiptQuery {
                project: None,
                session_id: None,
                after_seq: 0,
                before_seq: Some(6),
                until_seq: None,
                limit: 2,
            },
        )
        .await
        .unwrap();
    assert_eq!(newest.iter().map(|r| r.seq).collect::<Vec<_>>(), [5, 4]);
    let one = s
        .receipts_page(
            &c.tenant,
            &ReceiptQuery {
                project: Some(p.clone()),
                session_id: all[0].session_id,
                after_seq: 0,
                before_seq: None,
                until_seq: None,
                limit: 100,
            },
        )
        .await
        .unwrap();
    assert_eq!(one.len(), 2, "start and end of the first session");
}

pub async fn the_daily_brief_is_written_once_per_day(s: Arc<dyn Store>) {
    let c = agent(&tenant());
    let a = start(s.as_ref(), &c, "p", "k", None).await.session;
    s.end_session(&c, end_req(a.session_id, "k", "focus", 0))
        .await
        .unwrap();
    s.remember(&c, remember_req("p", ArtifactKind::Fact, "a fact"))
        .await
        .unwrap();
    // A busier project: more sessions than a brief lists, each with a long
    // summary. The day is read and the brief written bounded.
    for i in 0..25 {
        let key = format!("b{i}");
        let a = start(s.as_ref(), &c, "busy", &key, None).await.session;
        let mut r = end_req(a.session_id, &key, &format!("focus {i}"), i);
        r.summary = format!("summary {i:02} {}", "x".repeat(5_000));
        redigest(&mut r);
        s.end_session(&c, r).await.unwrap();
    }
    let now = chrono::Utc::now();
    // Several replicas' schedulers racing on the same day: one write.
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let s = s.clone();
        tasks.push(tokio::spawn(
            async move { s.generate_daily_briefs(now).await },
        ));
    }
    let mut written = 0;
    for t in tasks {
        written += t.await.unwrap().unwrap();
    }
    assert!(written >= 1);
    assert_eq!(
        s.generate_daily_briefs(now).await.unwrap(),
        0,
        "once per day"
    );
    let b = start(s.as_ref(), &c, "p", "k2", None).await.briefing;
    let brief = b.brief.expect("brief");
    assert!(!brief.stale);
    assert!(
        brief.body.starts_with("Daily brief for p, "),
        "{}",
        brief.body
    );
    assert!(
        brief.body.contains("Sessions closed: 1") && brief.body.contains("1 fact"),
        "{}",
        brief.body
    );
    let busy = start(s.as_ref(), &c, "busy", "k", None)
        .await
        .briefing
        .brief
        .expect("brief")
        .body;
    let listed: Vec<&str> = busy
        .lines()
        .filter(|l| l.starts_with("- [ended]"))
        .collect();
    assert_eq!(listed.len(), 20, "{busy}");
    assert!(
        listed[0].starts_with("- [ended] summary 05 x"),
        "the last 20, oldest first"
    );
    assert!(listed[19].starts_with("- [ended] summary 24 x"));
    assert!(
        busy.contains("Sessions closed: 25;") && busy.contains("- … 5 earlier, not listed"),
        "{busy}"
    );
    assert!(busy.contains("base@25"), "{busy}");
    assert!(
        busy.chars().count() < 6_000,
        "{} characters",
        busy.chars().count()
    );
}

/// SPEC §2.4 concurrency: exactly one `applied` per revision, the rest `conflict`,
/// and the receipt chain linear and gap-free.
pub async fn concurrent_ends_apply_once(s: Arc<dyn Store>) {
    const N: usize = 20;
    let c = agent(&tenant());
    let mut ids = Vec::new();
    for i in 0..N {
        ids.push(
            start(s.as_ref(), &c, "race", &format!("k{i}"), None)
                .await
                .session
                .session_id,
        );
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let (s, c, barrier) = (s.clone(), c.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let r = end_req(id, &format!("k{i}"), &format!("focus from {i}"), 0);
            s.end_session(&c, r).await
        }));
    }
    let mut applied = 0;
    let mut conflicts = 0;
    for t in tasks {
        let out = t.await.unwrap().unwrap();
        match out["focus_outcome"].as_str() {
            Some("applied") => applied += 1,
            Some("conflict") => conflicts += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((applied, conflicts), (1, N - 1));
    assert_eq!(base(s.as_ref(), &c, "race").await.1, 1);
    let receipts = s.receipts(&c.tenant).await.unwrap();
    assert_eq!(receipts.len(), 2 * N);
    assert_eq!(verify_chain(&receipts), Ok(2 * N));
}

/// Writers of a document that does not exist yet, all at once at revision 0:
/// one writes it, every other gets document_conflict at revision 1 with its
/// receipt, and the body is the winner's (compare-and-swap holds on a
/// document's first write too, where there is no row to lock).
pub async fn first_document_writes_race_to_one(s: Arc<dyn Store>) {
    use brain_core::memory::{DocumentKind, DocumentPut};
    const N: usize = 12;
    let c = agent(&tenant());
    start(s.as_ref(), &c, "p", "k", None).await;
    let before = receipt_count(s.as_ref(), &c).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(N));
    let mut tasks = Vec::new();
    for i in 0..N {
        let (s, c, barrier) = (s.clone(), c.clone(), barrier.clone());
        let put = DocumentPut {
            project: ProjectKey::parse("p").unwrap(),
            kind: DocumentKind::SyncNote,
            name: String::new(),
            body: format!("note from {i}"),
            expected_revision: 0,
            digest: "d".into(),
        };
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.document_put(&c, put).await
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(d) => winners.push(d),
            Err(e) => {
                let StoreError::Domain(e) = e else {
                    panic!("{e:?}")
                };
                assert_eq!(e.code, ErrorCode::DocumentConflict);
                assert_eq!(e.details["current_revision"], json!(1));
            }
        }
    }
    assert_eq!(winners.len(), 1, "one first write");
    let got = s
        .document_get(
            &c.tenant,
            &ProjectKey::parse("p").unwrap(),
            DocumentKind::SyncNote,
            "",
        )
        .await
        .unwrap();
    assert_eq!((got.revision, &got.body), (1, &winners[0].body));
    assert_eq!(receipt_count(s.as_ref(), &c).await, before + N);
}

/// A project holds at most `MAX_MENTAL_MODELS` mental models, however many
/// operators add new ones at once; replacing a model's body stays allowed,
/// and each refusal writes only its receipt.
pub async fn mental_models_are_bounded(s: Arc<dyn Store>) {
    use brain_core::memory::{DocumentKind, DocumentPut, MAX_MENTAL_MODELS};
    let op = caller(&tenant(), "op", Role::Operator);
    let put = |name: String, rev| DocumentPut {
        project: ProjectKey::parse("p").unwrap(),
        kind: DocumentKind::MentalModel,
        name,
        body: "a model".to_owned(),
        expected_revision: rev,
        digest: "d".into(),
    };
    let max = usize::try_from(MAX_MENTAL_MODELS).unwrap();
    // The project exists before the race, as it does for any operator who
    // writes models to it.
    start(s.as_ref(), &op, "p", "k", None).await;
    let before = receipt_count(s.as_ref(), &op).await;
    let n = max + 8;
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let mut tasks = Vec::new();
    for i in 0..n {
        let (s, op, barrier, p) = (
            s.clone(),
            op.clone(),
            barrier.clone(),
            put(format!("m{i}"), 0),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.document_put(&op, p).await
        }));
    }
    let (mut written, mut refused) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => written += 1,
            Err(e) => {
                assert_eq!(code(e), ErrorCode::InvalidArgument);
                refused += 1;
            }
        }
    }
    assert_eq!((written, refused), (max, n - max));
    assert_eq!(receipt_count(s.as_ref(), &op).await, before + n);
    // A model already there can still be replaced; a new one cannot be added.
    let names = s
        .mental_model_names(&op.tenant, &ProjectKey::parse("p").unwrap())
        .await
        .unwrap();
    assert_eq!(names.len(), max);
    s.document_put(&op, put(names[0].clone(), 1)).await.unwrap();
    let e = s
        .document_put(&op, put("one more".to_owned(), 0))
        .await
        .unwrap_err();
    assert_eq!(code(e), ErrorCode::InvalidArgument);
    let b = start(s.as_ref(), &op, "p", "k2", None).await.briefing;
    assert_eq!(b.mental_models.len(), max);

    // One place left, and writers of one new name race for it: one writes
    // it, and every other put is stale (document_conflict), not one model
    // too many.
    let put_q = |name: &str| DocumentPut {
        project: ProjectKey::parse("q").unwrap(),
        ..put(name.to_owned(), 0)
    };
    start(s.as_ref(), &op, "q", "k", None).await;
    for i in 0..max - 1 {
        s.document_put(&op, put_q(&format!("m{i}"))).await.unwrap();
    }
    let racers = 8;
    let barrier = Arc::new(tokio::sync::Barrier::new(racers));
    let mut tasks = Vec::new();
    for _ in 0..racers {
        let (s, op, barrier, p) = (s.clone(), op.clone(), barrier.clone(), put_q("last"));
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            s.document_put(&op, p).await
        }));
    }
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap().map_err(code).err());
    }
    assert_eq!(codes.iter().filter(|c| c.is_none()).count(), 1, "{codes:?}");
    assert!(
        codes
            .iter()
            .flatten()
            .all(|c| *c == ErrorCode::DocumentConflict),
        "{codes:?}"
    );
}

/// Every story, by name, for backends to run as one test each.
#[macro_export]
macro_rules! store_story {
    ($make:expr) => {
        $crate::store_story!(@tests $make;
            start_opens_a_session_with_a_receipt,
            end_applies_then_stale_revision_conflicts,
            identical_body_is_unchanged,
            checks_run_in_order_and_refusals_write_only_a_receipt,
            replay_answers_the_stored_result_and_writes_nothing,
            bound_sessions_compare_the_slot_revision,
            bind_rules,
            window_counts_are_right,
            dry_run_writes_nothing,
            relay_hands_the_slot_over,
            abandon_needs_consent_and_replays,
            tenants_are_walled,
            sessionless_elevation_authorizes_its_session,
            recall_is_ranked_filtered_paged_and_multilingual,
            documents_are_compare_and_swap,
            history_and_lists_page_newest_first,
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn the_daily_brief_is_written_once_per_day() {
            let (store, _guard) = $make.await;
            $crate::story::the_daily_brief_is_written_once_per_day(store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn first_document_writes_race_to_one() {
            let (store, _guard) = $make.await;
            $crate::story::first_document_writes_race_to_one(store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn mental_models_are_bounded() {
            let (store, _guard) = $make.await;
            $crate::story::mental_models_are_bounded(store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn concurrent_ends_apply_once() {
            let (store, _guard) = $make.await;
            $crate::story::concurrent_ends_apply_once(store).await;
        }
    };
    (@tests $make:expr; $($name:ident),+ $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                let (store, _guard) = $make.await;
                $crate::story::$name(store.as_ref()).await;
            }
        )+
    };
}

use super::*;
use crate::ids::{ClientKey, ProjectKey, SessionId, SlotName, TenantId};
use crate::model::{FocusOutcome, SessionStatus};

fn session(bound: Option<&str>) -> Session {
    Session::open_agent(
        &caller(CredentialKind::Jwt, Role::Agent),
        ProjectKey::parse("p").unwrap(),
        ClientKey::parse("client_key", "agent-1").unwrap(),
        bound.map(|s| SlotName::parse(s).unwrap()),
        0,
    )
}

fn focus(body: &str, revision: Revision) -> Focus {
    Focus {
        body: body.into(),
        revision,
        updated_at: None,
        updated_by_session: None,
    }
}

fn end(next_focus: &str, rev: Revision) -> EndRequest {
    EndRequest {
        session_id: SessionId::new_random(),
        expected_client_key: "agent-1".into(),
        summary: "did things".into(),
        next_focus: next_focus.into(),
        expected_focus_revision: rev,
        nothing_to_capture_reason: None,
        allow_focus_shrink: false,
        dry_run: false,
        keep_focus: false,
        door: crate::rules::Door::Brain,
        digest: "d".into(),
        merge: Default::default(),
    }
}

fn caller(kind: CredentialKind, role: Role) -> Caller {
    Caller {
        tenant: TenantId::parse("t").unwrap(),
        kind,
        credential_id: "c".into(),
        subject: "s".into(),
        role,
        connection_id: None,
        token_id: None,
        tracer_session: None,
    }
}

fn refused_code(d: CloseDecision) -> Option<ErrorCode> {
    match d {
        CloseDecision::Refuse(e) => Some(e.code),
        _ => None,
    }
}

// --- shrink guard -------------------------------------------------------

#[test]
fn ten_chars_to_seven_passes_and_six_is_refused_with_floor_seven() {
    assert_eq!(shrink_guard("0123456789", "0123456"), None);
    assert_eq!(
        shrink_guard("0123456789", "012345"),
        Some(Shrink {
            current: 10,
            proposed: 6,
            floor: 7
        })
    );
}

#[test]
fn lengths_are_unicode_scalar_values_not_bytes() {
    // 10 × "é" is 20 bytes; 7 × "漢" is 21 bytes but 7 chars; 6 emoji are 24 bytes.
    let current = "é".repeat(10);
    assert_eq!(shrink_guard(&current, &"漢".repeat(7)), None);
    let s = shrink_guard(&current, &"🦀".repeat(6));
    assert_eq!(
        s.map(|s| (s.current, s.proposed, s.floor)),
        Some((10, 6, 7))
    );
    // Byte counting would pass 4 emoji (16 bytes) against 10 ASCII chars; chars refuse.
    assert!(shrink_guard("abcdefghij", &"🦀".repeat(4)).is_some());
}

#[test]
fn an_empty_current_body_accepts_anything() {
    assert_eq!(shrink_guard("", "x"), None);
    assert_eq!(shrink_guard("", ""), None);
}

#[test]
fn floor_is_the_ceiling_of_seventy_percent() {
    for current in 1..200usize {
        let body = "a".repeat(current);
        let floor = (current * 7).div_ceil(10);
        assert!(
            shrink_guard(&body, &"a".repeat(floor)).is_none(),
            "{current}"
        );
        if floor > 0 {
            let s = shrink_guard(&body, &"a".repeat(floor - 1));
            assert_eq!(s.map(|s| s.floor), Some(floor), "{current}");
        }
    }
}

// --- steps 1–3 ----------------------------------------------------------

#[test]
fn step1_missing_session_is_not_found() {
    let e = check_session(None, "agent-1", &agent(), Door::Brain)
        .err()
        .map(|e| e.code);
    assert_eq!(e, Some(ErrorCode::SessionNotFound));
}

#[test]
fn step1_tracer_is_refused_before_the_key_is_compared() {
    let mut s = session(None);
    s.kind = SessionKind::Tracer;
    let e = check_session(Some(&s), "wrong", &agent(), Door::Brain)
        .err()
        .map(|e| e.code);
    assert_eq!(e, Some(ErrorCode::TracerSession));
}

#[test]
fn step2_wrong_key_is_a_mismatch_even_on_a_closed_session() {
    let mut s = session(None);
    s.status = SessionStatus::Ended;
    let e = check_session(Some(&s), "other", &agent(), Door::Brain)
        .err()
        .map(|e| e.code);
    assert_eq!(e, Some(ErrorCode::ClientKeyMismatch));
}

fn agent() -> Caller {
    caller(CredentialKind::Jwt, Role::Agent)
}

#[test]
fn a_reserved_projects_session_exists_only_for_its_profile() {
    let mut s = session(None);
    s.project = ProjectKey::runtime();
    let e = check_session(Some(&s), "agent-1", &agent(), Door::Brain).err();
    assert_eq!(e.map(|e| e.code), Some(ErrorCode::SessionNotFound));
    assert!(check_session(Some(&s), "agent-1", &agent(), Door::Profile).is_ok());
}

#[test]
fn a_profile_session_answers_only_its_credential_and_role() {
    let mut s = session(None);
    s.client_key = ClientKey::parse("k", "brain-core:s").unwrap();
    let mut other = agent();
    other.credential_id = "someone else".into();
    let operator_of_it = caller(CredentialKind::Jwt, Role::Operator);
    for (who, door) in [(&other, Door::Brain), (&other, Door::Profile)] {
        let e = check_session(Some(&s), "brain-core:s", who, door).err();
        assert_eq!(e.map(|e| e.code), Some(ErrorCode::ClientKeyMismatch));
    }
    // The same subject with another role's token is another authority.
    let e = check_session(Some(&s), "brain-core:s", &operator_of_it, Door::Profile).err();
    assert_eq!(e.map(|e| e.code), Some(ErrorCode::ClientKeyMismatch));
    assert!(check_session(Some(&s), "brain-core:s", &agent(), Door::Profile).is_ok());
    // An ordinary session is guarded by its key alone (SPEC §1 Session).
    let plain = session(None);
    assert!(check_session(Some(&plain), "agent-1", &other, Door::Brain).is_ok());
}

#[test]
fn step3_replay_only_for_the_same_digest() {
    let mut s = session(None);
    s.status = SessionStatus::Ended;
    let rec = CloseRecord {
        digest: "abc".into(),
        result: json!({"x": 1}),
    };
    assert_eq!(
        check_open_or_replay(&s, Some(&rec), "abc"),
        Ok(Some(json!({"x": 1})))
    );
    let e = check_open_or_replay(&s, Some(&rec), "abd").err();
    assert_eq!(e.as_ref().map(|e| e.code), Some(ErrorCode::SessionClosed));
    assert_eq!(e.map(|e| e.details["status"].clone()), Some(json!("ended")));
    assert_eq!(check_open_or_replay(&session(None), None, "abc"), Ok(None));
}

// --- steps 4–7 ----------------------------------------------------------

#[test]
fn step4_blank_fields_are_refused_naming_the_field() {
    let s = session(None);
    let f = focus("", 0);
    let mut r = end("next", 0);
    r.summary = "  ".into();
    let d = decide_close(&s, &r, CloseKind::End, None, false, &f);
    match d {
        CloseDecision::Refuse(e) => {
            assert_eq!(e.code, ErrorCode::InvalidArgument);
            assert_eq!(e.details["field"], json!("summary"));
        }
        other => panic!("{other:?}"),
    }
    let mut r = end(" \n", 0);
    r.summary = "ok".into();
    assert_eq!(
        refused_code(decide_close(&s, &r, CloseKind::End, None, false, &f)),
        Some(ErrorCode::InvalidArgument)
    );
}

#[test]
fn step4_blank_reason_refused_absent_reason_passes() {
    let s = session(None);
    let f = focus("", 0);
    let mut r = end("next", 0);
    r.nothing_to_capture_reason = Some(" ".into());
    assert_eq!(
        refused_code(decide_close(&s, &r, CloseKind::End, None, false, &f)),
        Some(ErrorCode::InvalidArgument)
    );
    r.nothing_to_capture_reason = None;
    assert_eq!(
        decide_close(&s, &r, CloseKind::End, None, false, &f),
        CloseDecision::Apply { new_revision: 1 }
    );
    r.nothing_to_capture_reason = Some("nothing new".into());
    assert_eq!(
        decide_close(&s, &r, CloseKind::End, None, false, &f),
        CloseDecision::Apply { new_revision: 1 }
    );
}

#[test]
fn step5_override_without_authority_is_refused_even_when_nothing_shrinks() {
    let s = session(None);
    let f = focus("short", 3);
    let mut r = end("a much longer body than before", 3);
    r.allow_focus_shrink = true;
    assert_eq!(
        refused_code(decide_close(&s, &r, CloseKind::End, None, false, &f)),
        Some(ErrorCode::FocusShrinkOverrideRefused)
    );
    assert_eq!(
        decide_close(&s, &r, CloseKind::End, None, true, &f),
        CloseDecision::Apply { new_revision: 4 }
    );
}

#[test]
fn step5_comes_before_the_shrink_guard_and_the_revision() {
    let s = session(None);
    let f = focus("0123456789", 3);
    let mut r = end("0", 99);
    r.allow_focus_shrink = true;
    assert_eq!(
        refused_code(decide_close(&s, &r, CloseKind::End, None, false, &f)),
        Some(ErrorCode::FocusShrinkOverrideRefused)
    );
}

#[test]
fn step6_shrink_codes_depend_on_binding_and_carry_numbers() {
    let f = focus("0123456789", 1);
    let r = end("012345", 1);
    match decide_close(&session(None), &r, CloseKind::End, None, false, &f) {
        CloseDecision::Refuse(e) => {
            assert_eq!(e.code, ErrorCode::BaseFocusShrink);
            assert_eq!(e.details, json!({"current": 10, "proposed": 6, "floor": 7}));
            assert!(
                e.message
                    .starts_with("next_focus has 6 characters, the floor is 7 of 10")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        refused_code(decide_close(
            &session(Some("ui")),
            &r,
            CloseKind::End,
            None,
            false,
            &f
        )),
        Some(ErrorCode::SlotFocusShrink)
    );
}

#[test]
fn step6_runs_before_the_revision_check() {
    // A stale revision AND a shrink: the shrink refuses and the session stays open.
    let f = focus("0123456789", 5);
    let r = end("01", 4);
    assert_eq!(
        refused_code(decide_close(
            &session(None),
            &r,
            CloseKind::End,
            None,
            false,
            &f
        )),
        Some(ErrorCode::BaseFocusShrink)
    );
}

#[test]
fn step6_an_override_in_force_lets_a_shrink_through() {
    let f = focus("0123456789", 5);
    let mut r = end("01", 5);
    r.allow_focus_shrink = true;
    assert_eq!(
        decide_close(&session(None), &r, CloseKind::End, None, true, &f),
        CloseDecision::Apply { new_revision: 6 }
    );
}

#[test]
fn step7_stale_revision_is_a_conflict_and_identical_body_is_unchanged() {
    let f = focus("body", 2);
    assert_eq!(
        decide_close(
            &session(None),
            &end("new body", 1),
            CloseKind::End,
            None,
            false,
            &f
        ),
        CloseDecision::Conflict
    );
    assert_eq!(
        decide_close(
            &session(None),
            &end("body", 2),
            CloseKind::End,
            None,
            false,
            &f
        ),
        CloseDecision::Unchanged
    );
    assert_eq!(
        decide_close(
            &session(None),
            &end("body2", 2),
            CloseKind::End,
            None,
            false,
            &f
        ),
        CloseDecision::Apply { new_revision: 3 }
    );
}

#[test]
fn relay_requires_a_slot_and_a_receiver() {
    let f = focus("", 0);
    let r = end("next", 0);
    assert_eq!(
        refused_code(decide_close(
            &session(None),
            &r,
            CloseKind::Relay,
            Some("b"),
            false,
            &f
        )),
        Some(ErrorCode::RelayRequiresSlot)
    );
    assert_eq!(
        refused_code(decide_close(
            &session(Some("ui")),
            &r,
            CloseKind::Relay,
            Some(" "),
            false,
            &f
        )),
        Some(ErrorCode::InvalidArgument)
    );
    assert_eq!(
        decide_close(
            &session(Some("ui")),
            &r,
            CloseKind::Relay,
            Some("b"),
            false,
            &f
        ),
        CloseDecision::Apply { new_revision: 1 }
    );
}

// --- authority ----------------------------------------------------------

#[test]
fn only_elevated_jwts_and_operator_relays_may_override() {
    let none = OverrideGrant::default();
    let elevated = OverrideGrant {
        elevation_active: true,
    };
    let agent = caller(CredentialKind::Jwt, Role::Agent);
    let operator = caller(CredentialKind::Jwt, Role::Operator);
    let relayer = caller(CredentialKind::Jwt, Role::Relay);
    assert!(!may_override(&agent, false, none));
    assert!(!may_override(&agent, true, none));
    // Authority follows the token: an elevation counts for operator tokens only.
    assert!(!may_override(&agent, false, elevated));
    assert!(!may_override(&relayer, false, elevated));
    assert!(may_override(&operator, false, elevated));
    assert!(elevation_can_count(&operator));
    assert!(!elevation_can_count(&agent) && !elevation_can_count(&relayer));
    assert!(!may_override(&operator, false, none));
    assert!(may_override(&operator, true, none));
    assert!(may_override(&relayer, true, none));
    for kind in [CredentialKind::SharedToken, CredentialKind::Stdio] {
        let c = caller(kind, Role::Operator);
        assert!(!may_override(&c, true, elevated));
        assert!(!may_override(&c, false, elevated));
    }
}

// --- abandon and bind ---------------------------------------------------

#[test]
fn abandon_needs_a_reason_then_consent() {
    assert_eq!(
        check_abandon(" ", true, false).err().map(|e| e.code),
        Some(ErrorCode::InvalidArgument)
    );
    assert_eq!(
        check_abandon("done", false, false).err().map(|e| e.code),
        Some(ErrorCode::ConfirmRequired)
    );
    assert!(check_abandon("done", true, false).is_ok());
    assert!(check_abandon("done", false, true).is_ok());
}

#[test]
fn bind_is_idempotent_for_the_same_slot_only() {
    let ui = SlotName::parse("ui").unwrap();
    let api = SlotName::parse("api").unwrap();
    assert_eq!(check_bind(&session(None), &ui), Ok(false));
    assert_eq!(check_bind(&session(Some("ui")), &ui), Ok(true));
    assert_eq!(
        check_bind(&session(Some("ui")), &api).err().map(|e| e.code),
        Some(ErrorCode::AlreadyBound)
    );
}

// --- what a close leaves behind -----------------------------------------

#[test]
fn a_close_sets_the_status_the_spec_names() {
    let now = crate::model::now_micros();
    for (kind, outcome, status) in [
        (CloseKind::End, FocusOutcome::Applied, SessionStatus::Ended),
        (
            CloseKind::End,
            FocusOutcome::Unchanged,
            SessionStatus::Ended,
        ),
        (
            CloseKind::End,
            FocusOutcome::Conflict,
            SessionStatus::Conflicted,
        ),
        (
            CloseKind::Relay,
            FocusOutcome::Applied,
            SessionStatus::Relayed,
        ),
        (
            CloseKind::Relay,
            FocusOutcome::Unchanged,
            SessionStatus::Relayed,
        ),
        (
            CloseKind::Relay,
            FocusOutcome::Conflict,
            SessionStatus::Conflicted,
        ),
    ] {
        let mut s = session(Some("ui"));
        close_session(&mut s, &end("next", 0), kind, outcome, now);
        assert_eq!(s.status, status, "{kind:?} {outcome:?}");
        assert_eq!(s.focus_outcome, Some(outcome));
        assert_eq!(s.ended_at, Some(now));
        assert_eq!(s.next_focus.as_deref(), Some("next"));
    }
    assert_eq!(close_receipt_outcome(FocusOutcome::Conflict), "conflict");
    assert_eq!(close_receipt_outcome(FocusOutcome::Applied), "ok");
}

#[test]
fn the_relayed_slot_shows_what_the_receiver_must_pass() {
    let name = SlotName::parse("ui").unwrap();
    let found = focus("old", 4);
    let applied = crate::outcome::slot_after_relay(&name, FocusOutcome::Applied, &found, "new");
    assert_eq!((applied.body.as_str(), applied.revision), ("new", 5));
    let conflict = crate::outcome::slot_after_relay(&name, FocusOutcome::Conflict, &found, "new");
    assert_eq!((conflict.body.as_str(), conflict.revision), ("old", 4));
}

/// Step 6 on a stale revision (the common two-agent case): the shrink
/// refusal also says the revision is stale and which one is current, so the
/// agent reads the body it has to carry content over from.
#[test]
fn step6_a_shrink_on_a_stale_revision_names_the_current_one() {
    let s = session(None);
    let current = focus(&"x".repeat(127), 5);
    let refusal = |rev| match decide_close(
        &s,
        &end("short", rev),
        CloseKind::End,
        None,
        false,
        &current,
    ) {
        CloseDecision::Refuse(e) => e,
        other => panic!("{other:?}"),
    };
    let e = refusal(3);
    assert_eq!(e.code, ErrorCode::BaseFocusShrink);
    assert_eq!(e.details["stale"], json!(true));
    assert_eq!(e.details["current_revision"], json!(5));
    assert_eq!(e.details["floor"], json!(89));
    assert!(
        e.message.contains("the current revision is 5") && e.message.contains("brain_focus_get"),
        "{}",
        e.message
    );
    // On the current revision it is the plain refusal.
    let e = refusal(5);
    assert_eq!(e.details.get("stale"), None);
    assert_eq!(e.details.get("current_revision"), None);
}

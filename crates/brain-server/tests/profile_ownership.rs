//! Black-box: the compatibility profiles' sessions belong to the credential,
//! with its role, that opened them, and the reserved `_runtime` project is
//! written only by its profile (third hostile review, M1), on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_server::profiles::Profiles;
use brain_testkit::app::{
    TestApp, TestOptions, call, jwt_config, ok, refused, spawn_app_opts, token_with,
};
use serde_json::{Value, json};

async fn app() -> TestApp {
    spawn_app_opts(
        jwt_config(),
        TestOptions {
            profiles: Profiles::parse("brain,brain-core,aziel").unwrap(),
            ..TestOptions::default()
        },
    )
    .await
}

fn as_role(sub: &str, role: &str) -> String {
    token_with(json!({"tenant": "acme", "sub": sub, "role": role}))
}

fn end_args(id: &Value, key: &str) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": "mine now",
           "next_focus": "taken over", "expected_focus_revision": 0})
}

/// The envelope of an aziel refusal: its code.
async fn aziel_code(c: &brain_testkit::app::Client, args: Value) -> String {
    let r = call(c, "runtime_session_close", args).await;
    let v = r.structured_content.unwrap();
    v["code"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn brains_own_tools_do_not_reach_raw_runtime_sessions() {
    let app = app().await;
    let alice = app.client(&as_role("alice", "agent")).await;
    let raw = ok(&alice, "runtime_session_open", json!({})).await;
    let id = raw["session_id"].clone();
    let key = "aziel:alice";
    // Even its opener, through brain's tools: the session does not exist there.
    for (tool, args) in [
        ("brain_session_end", end_args(&id, key)),
        (
            "brain_session_relay",
            json!({"session_id": id, "expected_client_key": key, "summary": "s",
                   "next_focus": "x", "expected_focus_revision": 0, "to_client_key": "b"}),
        ),
        (
            "brain_session_bind",
            json!({"session_id": id, "expected_client_key": key, "slot": "s1"}),
        ),
        (
            "brain_session_abandon",
            json!({"session_id": id, "expected_client_key": key, "reason": "r", "confirm": true}),
        ),
        (
            "brain_session_resume",
            json!({"session_id": id, "expected_client_key": key}),
        ),
        ("brain_session_get", json!({"session_id": id})),
    ] {
        let e = refused(&alice, tool, args).await;
        assert_eq!(e["code"], "session_not_found", "{tool}: {e}");
    }
    // Nothing was written there: the raw session is still open, and seals.
    let sealed = ok(
        &alice,
        "runtime_session_close",
        json!({"session_id": id, "confirm": true}),
    )
    .await;
    assert_eq!(sealed["code"], "FG-OK");
    assert_eq!(sealed["result"]["session"]["status"], "ended");
    assert_eq!(
        sealed["result"]["session"]["summary"],
        "sealed with runtime_session_close"
    );
}

#[tokio::test]
async fn a_raw_session_is_sealed_only_by_its_credential_with_its_role() {
    let app = app().await;
    let op = app.client(&as_role("alice", "operator")).await;
    let raw = ok(&op, "runtime_session_open", json!({})).await;
    let id = raw["session_id"].clone();
    let args = json!({"session_id": id, "confirm": true});
    let same_sub_agent = app.client(&as_role("alice", "agent")).await;
    assert_eq!(
        aziel_code(&same_sub_agent, args.clone()).await,
        "client_key_mismatch"
    );
    let bob = app.client(&as_role("bob", "operator")).await;
    assert_eq!(aziel_code(&bob, args.clone()).await, "client_key_mismatch");
    assert_eq!(aziel_code(&op, args).await, "FG-OK");
}

#[tokio::test]
async fn a_brain_core_session_is_ended_only_by_its_credential_with_its_role() {
    let app = app().await;
    let alice = app.client(&as_role("alice", "agent")).await;
    let s = ok(
        &alice,
        "brain_session",
        json!({"phase": "start", "project": "p"}),
    )
    .await;
    let id = s["session_id"].clone();
    // Its client key is derived from the subject: anyone can name it, and
    // naming it is not enough.
    let bob = app.client(&as_role("bob", "agent")).await;
    let e = refused(&bob, "brain_session_end", end_args(&id, "brain-core:alice")).await;
    assert_eq!(e["code"], "client_key_mismatch");
    let e = refused(
        &bob,
        "brain_session_abandon",
        json!({"session_id": id, "expected_client_key": "brain-core:alice", "reason": "r", "confirm": true}),
    )
    .await;
    assert_eq!(e["code"], "client_key_mismatch");
    let r = call(
        &bob,
        "brain_session",
        json!({"phase": "end", "session_id": id}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    // The same subject with an operator's token is another authority.
    let op = app.client(&as_role("alice", "operator")).await;
    let r = call(
        &op,
        "brain_session",
        json!({"phase": "end", "session_id": id}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    // Nothing was written before the refusals (the profile's end replaces
    // three documents first), and the session is still alice's to end.
    for document in ["executive_state", "critique", "sync_note"] {
        let d = ok(
            &alice,
            "brain_document_get",
            json!({"project": "p", "document": document}),
        )
        .await;
        assert_eq!(d["document"]["revision"], 0, "{document} was written: {d}");
    }
    let done = ok(
        &alice,
        "brain_session",
        json!({"phase": "end", "session_id": id}),
    )
    .await;
    assert_eq!(done["closed_now"], true);
}

#[tokio::test]
async fn callers_cannot_choose_a_profiles_client_key() {
    let app = app().await;
    let c = app.client(&as_role("mallory", "agent")).await;
    for key in ["brain-core:alice", "aziel:alice"] {
        let e = refused(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": key}),
        )
        .await;
        assert_eq!(e["code"], "invalid_argument", "{e}");
    }
}

/// A profile's client key is cut to 200 characters, not bytes: with a
/// subject of multi-byte characters the byte cut fell inside one and the call
/// panicked (a cold review of this change): "aziel:" + 80 "€" (246 bytes),
/// "brain-core:" + 120 "é" (251 bytes).
#[tokio::test]
async fn a_long_non_ascii_subject_gets_a_profile_session() {
    let app = app().await;
    let euro = app.client(&as_role(&"€".repeat(80), "agent")).await;
    let raw = ok(&euro, "runtime_session_open", json!({})).await;
    assert_eq!(raw["code"], "FG-OK");
    assert_eq!(
        raw["result"]["client_key"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        86
    );
    let accent = app.client(&as_role(&"é".repeat(120), "agent")).await;
    let s = ok(
        &accent,
        "brain_session",
        json!({"phase": "start", "project": "p"}),
    )
    .await;
    let done = ok(
        &accent,
        "brain_session",
        json!({"phase": "end", "session_id": s["session_id"]}),
    )
    .await;
    assert_eq!(done["closed_now"], true);
}

//! Black-box: the compatibility profiles (SPEC §2.10), driven through an MCP
//! client exactly as the seed pages tell an agent to, on both stores.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use brain_server::profiles::Profiles;
use brain_testkit::app::{
    Client, TestApp, TestOptions, call, exec, jwt_config, ok, spawn_app, spawn_app_opts, token,
};
use serde_json::{Value, json};

async fn app_with(profiles: &str, idle: u64) -> TestApp {
    spawn_app_opts(
        jwt_config(),
        TestOptions {
            profiles: Profiles::parse(profiles).unwrap(),
            connection_idle_secs: idle,
            ..TestOptions::default()
        },
    )
    .await
}

async fn names(c: &Client) -> Vec<String> {
    c.list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// A refusal in a profile's envelope: `isError`, and the structured content.
async fn refused(c: &Client, tool: &str, args: Value) -> Value {
    let r = call(c, tool, args).await;
    assert_eq!(r.is_error, Some(true), "{tool} should refuse: {r:?}");
    r.structured_content.unwrap()
}

#[tokio::test]
async fn the_default_profile_lists_no_seed_tools() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let listed = names(&c).await;
    assert_eq!(listed.len(), 17);
    for seed in [
        "brain_session",
        "runtime_session_open",
        "runtime_session_close",
    ] {
        assert!(
            !listed.iter().any(|n| n == seed),
            "{seed} is listed by default"
        );
    }
    let r = c
        .call_tool(rmcp::model::CallToolRequestParams::new("brain_session"))
        .await;
    assert!(r.is_err(), "an unlisted profile tool is unknown");
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn brain_core_sessions_start_end_and_overwrite() {
    let app = app_with("brain,brain-core", 600).await;
    let c = app.client(&token("acme", "agent-1")).await;
    let listed = names(&c).await;
    assert!(listed.contains(&"brain_session".to_owned()) && listed.len() == 18);

    // start: the whole context block.
    let s = ok(&c, "brain_session", json!({"phase": "start"})).await;
    let sid = s["session_id"].as_str().unwrap().to_owned();
    let b = &s["briefing"];
    for key in [
        "brief",
        "executive_state",
        "mental_models",
        "recall",
        "inbox_count",
        "recovery",
    ] {
        assert!(b.get(key).is_some(), "briefing lacks {key}: {b}");
    }
    assert!(b["recovery"].is_null());
    // Work: a decision and a fact on the session's ledger.
    for (kind, text) in [
        ("decision", "ship the adapter"),
        ("fact", "tests run on both stores"),
    ] {
        ok(
            &c,
            "brain_remember",
            json!({"project": "main", "kind": kind, "text": text, "session_id": sid,
                   "expected_client_key": "brain-core:agent-1"}),
        )
        .await;
    }
    // end, session_id omitted: the one this connection started; stubs for all three.
    let e = ok(&c, "brain_session", json!({"phase": "end"})).await;
    assert_eq!(e["session_id"], json!(sid));
    assert_eq!(e["status"], json!("ended"));
    assert_eq!(e["closed_now"], json!(true));
    for doc in ["executive_state", "critique", "sync_note"] {
        assert_eq!(e["documents"][doc]["stub"], json!(true), "{e}");
    }
    let moved: Vec<&str> = e["signals_moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        moved.contains(&"ledger_size") && moved.contains(&"pending_decisions"),
        "{moved:?}"
    );
    assert!(!moved.contains(&"focus_revision"));
    let state = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "executive_state"}),
    )
    .await;
    assert!(state.to_string().contains("ship the adapter"), "{state}");
    let critique = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "critique"}),
    )
    .await["document"]
        .clone();
    let first_rev = critique["revision"].as_i64().unwrap();
    assert!(
        critique["body"]
            .as_str()
            .unwrap()
            .contains("tests run on both stores")
    );

    // A second end overwrites the documents of the first; the session stays ended.
    let e2 = ok(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": sid, "critique": "# Better critique\nkeep it short",
               "executive_state": "# Ship profiles\n- missions later", "sync": "all done"}),
    )
    .await;
    assert_eq!(e2["closed_now"], json!(false));
    assert_eq!(e2["status"], json!("ended"));
    assert_eq!(e2["documents"]["critique"]["stub"], json!(false));
    let critique = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "critique"}),
    )
    .await["document"]
        .clone();
    assert_eq!(critique["body"], json!("# Better critique\nkeep it short"));
    assert_eq!(critique["revision"].as_i64().unwrap(), first_rev + 1);
    let state = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "executive_state"}),
    )
    .await;
    assert!(
        state["document"]["body"]
            .as_str()
            .unwrap()
            .contains("\"objective\":\"Ship profiles\""),
        "{state}"
    );
    // The focus was never touched.
    let f = ok(&c, "brain_focus_get", json!({"project": "main"})).await;
    assert_eq!(f["revision"], json!(0));

    // An unclosed session shows up as recovery on the next start.
    ok(&c, "brain_session", json!({"phase": "start"})).await;
    let again = ok(&c, "brain_session", json!({"phase": "start"})).await;
    assert!(again["briefing"]["recovery"].is_object(), "{again}");
    // Phase-specific arguments are refused on the other phase.
    let r = call(
        &c,
        "brain_session",
        json!({"phase": "start", "critique": "x"}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    // start with a session_id keeps (resumes) that session.
    let kept = ok(
        &c,
        "brain_session",
        json!({"phase": "start", "session_id": again["session_id"]}),
    )
    .await;
    assert_eq!(kept["session_id"], again["session_id"]);
    // Blank bodies and malformed JSON executive states are refused, nothing written.
    let before = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "critique"}),
    )
    .await;
    for args in [
        json!({"phase": "end", "session_id": again["session_id"], "critique": "   "}),
        json!({"phase": "end", "session_id": again["session_id"], "executive_state": "{\"objective\": 5}"}),
    ] {
        let e = brain_testkit::app::refused(&c, "brain_session", args).await;
        assert_eq!(e["code"], json!("invalid_argument"), "{e}");
    }
    let after = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "critique"}),
    )
    .await;
    assert_eq!(before, after);

    // Only your own brain-core sessions: another subject's is client_key_mismatch,
    // and nothing is written.
    let bob = app.client(&token("acme", "bob")).await;
    let theirs = ok(&bob, "brain_session", json!({"phase": "start"})).await;
    let e = brain_testkit::app::refused(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": theirs["session_id"], "critique": "not yours"}),
    )
    .await;
    assert_eq!(e["code"], json!("client_key_mismatch"));
    let after = ok(
        &c,
        "brain_document_get",
        json!({"project": "main", "document": "critique"}),
    )
    .await;
    assert_eq!(before, after, "a refused end writes no document");
    let got = ok(
        &c,
        "brain_session_get",
        json!({"session_id": theirs["session_id"]}),
    )
    .await;
    assert_eq!(got["session"]["status"], json!("open"));
    // A native session on the connection is not brain_session's to end.
    ok(
        &bob,
        "brain_session_start",
        json!({"project": "main", "client_key": "native"}),
    )
    .await;
    let e = brain_testkit::app::refused(&bob, "brain_session", json!({"phase": "end"})).await;
    assert_eq!(e["code"], json!("client_key_mismatch"));
    bob.cancel().await.unwrap();
    c.cancel().await.unwrap();
    verify_chain(&app).await;
}

#[tokio::test]
async fn profiles_do_not_reach_each_others_sessions() {
    let app = app_with("brain,brain-core,aziel", 600).await;
    let c = app.client(&token("acme", "both")).await;
    let raw = ok(&c, "runtime_session_open", json!({})).await;
    let e = brain_testkit::app::refused(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": raw["session_id"]}),
    )
    .await;
    assert_eq!(
        e["code"],
        json!("session_not_found"),
        "a raw session is not brain_session's"
    );
    let working = ok(&c, "brain_session", json!({"phase": "start"})).await;
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"session_id": working["session_id"], "confirm": true}),
    )
    .await;
    assert_eq!(
        r["code"],
        json!("session_not_found"),
        "a working session is not a raw one"
    );
    // Seed clients' leftovers: unknown keys are ignored, malformed values refused in the envelope.
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"id": raw["session_id"], "force": true}),
    )
    .await;
    assert_eq!(r["code"], json!("MCP-CONFIRM-REQUIRED"));
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"id": "sess_XYZ", "confirm": true}),
    )
    .await;
    // A malformed id is answered as an unknown one, as the seed says (and as brain does).
    assert_eq!(
        (r["code"].clone(), r["status"].clone()),
        (json!("session_not_found"), json!(404))
    );
    assert!(r["display"]["summary"].is_string());
    let r = refused(&c, "runtime_session_open", json!({"client_key": "   "})).await;
    assert_eq!(r["code"], json!("invalid_argument"));
    let dry = ok(
        &c,
        "runtime_session_close",
        json!({"id": raw["session_id"], "dry_run": true}),
    )
    .await;
    assert_eq!(
        dry["result"]["session"]["status"],
        json!("open"),
        "a dry run shows the session as it is"
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn aziel_runtime_sessions_open_and_seal() {
    let app = app_with("aziel", 4).await;
    let c = app.client(&token("acme", "runner")).await;
    let listed = names(&c).await;
    assert_eq!(
        listed,
        vec!["runtime_session_open", "runtime_session_close"]
    );

    let opened = ok(&c, "runtime_session_open", json!({})).await;
    assert_eq!(opened["code"], json!("FG-OK"));
    assert_eq!(opened["status"], json!(200));
    let sid = opened["result"]["session_id"].as_str().unwrap().to_owned();
    assert!(
        sid.len() == 37
            && sid.starts_with("sess_")
            && sid[5..]
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{sid}"
    );
    assert!(opened["display"]["title"].is_string() && opened["ledger_tip"]["seq"].is_i64());

    // Consent is required; a dry run previews only when a close would proceed.
    let r = refused(&c, "runtime_session_close", json!({"session_id": sid})).await;
    assert_eq!(r["code"], json!("MCP-CONFIRM-REQUIRED"));
    assert_eq!(r["status"], json!(428));
    let dry = ok(
        &c,
        "runtime_session_close",
        json!({"session_id": sid, "dry_run": true}),
    )
    .await;
    assert_eq!(dry["code"], json!("MCP-DRY-RUN"));
    assert_eq!(dry["result"]["sealed"], json!(false));
    let unknown = "sess_00000000000000000000000000000000";
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"session_id": unknown, "dry_run": true}),
    )
    .await;
    assert_eq!(r["code"], json!("session_not_found"));
    assert_eq!(r["status"], json!(404));
    // Aliases: one of the two, never two different values; neither is refused.
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"session_id": sid, "id": unknown, "confirm": true}),
    )
    .await;
    assert_eq!(r["status"], json!(422));
    let r = refused(&c, "runtime_session_close", json!({"confirm": true})).await;
    assert_eq!(r["refusal"]["message"], json!("session_id required"));

    // Seal it, through the alias.
    let sealed = ok(
        &c,
        "runtime_session_close",
        json!({"id": sid, "confirm": true}),
    )
    .await;
    assert_eq!(sealed["code"], json!("FG-OK"));
    assert_eq!(sealed["status"], json!(200));
    assert_eq!(sealed["result"]["sealed"], json!(true));
    assert_eq!(sealed["result"]["verified"], json!(true), "{sealed}");
    assert!(sealed["result"]["receipt"]["hash"].is_string());
    assert_eq!(
        sealed["ledger_tip"]["hash"],
        sealed["result"]["receipt"]["hash"]
    );
    for key in ["title", "summary", "next"] {
        assert!(sealed["display"][key].is_string());
    }
    // A second close never reopens it.
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"session_id": sid, "confirm": true}),
    )
    .await;
    assert_eq!(r["code"], json!("session_closed"));
    assert_eq!(r["status"], json!(409));
    let r = refused(
        &c,
        "runtime_session_close",
        json!({"session_id": unknown, "confirm": true}),
    )
    .await;
    assert_eq!(r["code"], json!("session_not_found"));

    // Raw sessions never closed expire after 6 h unused (the sweep closes them).
    let stale = ok(&c, "runtime_session_open", json!({})).await;
    let stale_id = stale["session_id"].as_str().unwrap().to_owned();
    let age = if app.db.url().starts_with("sqlite") {
        "UPDATE sessions SET last_activity_at = last_activity_at - 25200000000 WHERE project = '_runtime' AND status = 'open'"
    } else {
        "UPDATE sessions SET last_activity_at = last_activity_at - interval '7 hours' WHERE project = '_runtime' AND status = 'open'"
    };
    exec(&app, age).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = call(
            &c,
            "runtime_session_close",
            json!({"session_id": stale_id, "dry_run": true}),
        )
        .await;
        let v = r.structured_content.unwrap();
        if v["code"] == json!("session_closed") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stale raw session never expired: {v}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    c.cancel().await.unwrap();
    verify_chain(&app).await;
}

/// The profile's receipts are in the tenant's one chain, and it verifies.
async fn verify_chain(app: &TestApp) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain"))
        .args([
            "receipts",
            "verify",
            "--tenant",
            "acme",
            "--database-url",
            app.db.url(),
        ])
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with("OK tenant=acme"),
        "{text}"
    );
}

/// The brain-core profile's end takes its own project (naming it is
/// harmless), refuses another before writing, and takes the executive
/// state as an object.
#[tokio::test]
async fn brain_core_end_takes_its_own_project_and_an_object_state() {
    let app = app_with("brain,brain-core", 600).await;
    let c = app.client(&token("acme", "agent-1")).await;
    let s = ok(
        &c,
        "brain_session",
        json!({"phase": "start", "project": "work"}),
    )
    .await;
    let sid = s["session_id"].clone();
    let e = brain_testkit::app::refused(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": sid, "project": "elsewhere"}),
    )
    .await;
    assert_eq!(e["code"], "invalid_argument");
    assert!(e["message"].as_str().unwrap().contains("work"), "{e}");
    let untouched = ok(
        &c,
        "brain_document_get",
        json!({"project": "work", "kind": "executive_state"}),
    )
    .await;
    assert_eq!(untouched["document"]["revision"], 0);
    ok(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": sid, "project": "work",
               "executive_state": {"objective": "Ship", "missions": [], "pending_decisions": []}}),
    )
    .await;
    let state = ok(
        &c,
        "brain_document_get",
        json!({"project": "work", "kind": "executive_state"}),
    )
    .await;
    assert!(
        state["document"]["body"]
            .as_str()
            .unwrap()
            .contains("\"objective\":\"Ship\""),
        "{state}"
    );
}

/// Hostile review: an end that omits its session id looked for the
/// connection's start by walking the tenant's receipts newest first, to the
/// chain's start when the connection had started nothing (the chain has no
/// index by connection). It now looks among the 10,000 newest receipts, and
/// a profile's start records its session on the connection, so its end finds
/// it however busy the tenant is meanwhile.
#[tokio::test]
async fn brain_core_end_finds_its_start_past_a_busy_chain() {
    let app = app_with("brain,brain-core", 600).await;
    let c = app.client(&token("acme", "agent-1")).await;
    let started = ok(&c, "brain_session", json!({"phase": "start"})).await;
    let sid = started["session_id"].as_str().unwrap().to_owned();
    // A native start on another connection, whose end through the profile
    // would be refused as not the profile's (client_key_mismatch) if found.
    let native = app.client(&token("acme", "agent-2")).await;
    ok(
        &native,
        "brain_session_start",
        json!({"project": "main", "client_key": "native"}),
    )
    .await;
    // 12,000 receipts of nobody's after both, the tip moved past them.
    let (id, at) = match &app.db {
        brain_testkit::app::TestBackend::Postgres(_) => ("gen_random_uuid()", "now()"),
        brain_testkit::app::TestBackend::Sqlite(_) => ("randomblob(16)", "0"),
    };
    let tip = brain_testkit::app::count_rows(&app, "receipts").await;
    assert_eq!(tip, 2, "the two starts are the tenant's only receipts");
    let fill = format!(
        "WITH RECURSIVE g(n) AS (SELECT {} UNION ALL SELECT n + 1 FROM g WHERE n < {}) \
         INSERT INTO receipts (tenant_id, seq, receipt_id, at, tool, project, session_id, \
         credential_kind, subject, token_id, connection_id, elevated, outcome, \
         request_digest, prev_hash, hash) SELECT 'acme', n, {id}, {at}, 'brain_remember', \
         NULL, NULL, 'jwt', 'filler', NULL, NULL, false, 'ok', 'd', 'p', 'h' FROM g",
        tip + 1,
        tip + 12_000
    );
    exec(&app, &fill).await;
    exec(
        &app,
        &format!(
            "UPDATE receipt_heads SET seq = {} WHERE tenant_id = 'acme'",
            tip + 12_000
        ),
    )
    .await;

    // The native start is past the 10,000 newest receipts: not looked for.
    let e = brain_testkit::app::refused(&native, "brain_session", json!({"phase": "end"})).await;
    assert_eq!(e["code"], json!("invalid_argument"), "{e}");
    assert_eq!(e["details"]["field"], json!("session_id"), "{e}");
    // The profile's start is found on its connection.
    let e = ok(&c, "brain_session", json!({"phase": "end"})).await;
    assert_eq!(e["session_id"], json!(sid), "{e}");
    assert_eq!(e["status"], json!("ended"));
    c.cancel().await.unwrap();
    native.cancel().await.unwrap();
}

/// Review: a resume writes no receipt, so the receipts alone named the
/// session the connection first started, not the one it resumed last. The
/// newer of the two is ended.
#[tokio::test]
async fn brain_core_end_after_a_resume_ends_the_resumed_session() {
    let app = app_with("brain,brain-core", 600).await;
    let c = app.client(&token("acme", "agent-1")).await;
    let first = ok(&c, "brain_session", json!({"phase": "start"})).await;
    let other = app.client(&token("acme", "agent-1")).await;
    let second = ok(&other, "brain_session", json!({"phase": "start"})).await;
    ok(
        &c,
        "brain_session",
        json!({"phase": "start", "session_id": second["session_id"]}),
    )
    .await;
    let e = ok(&c, "brain_session", json!({"phase": "end"})).await;
    assert_eq!(e["session_id"], second["session_id"], "{e}");
    let got = ok(
        &c,
        "brain_session_get",
        json!({"session_id": first["session_id"]}),
    )
    .await;
    assert_eq!(got["session"]["status"], json!("open"));
    c.cancel().await.unwrap();
    other.cancel().await.unwrap();
}

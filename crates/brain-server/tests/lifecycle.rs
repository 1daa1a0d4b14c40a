//! Black-box: the session lifecycle of SPEC §2.1–2.7 through rmcp's own MCP
//! client against the real server and a real PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use brain_core::ids::TenantId;
use brain_core::receipt::verify_chain;
use brain_testkit::app::{Client, call, ok, refused, spawn_app, token};
use serde_json::{Value, json};

async fn start(c: &Client, project: &str, key: &str) -> Value {
    ok(
        c,
        "brain_session_start",
        json!({"project": project, "client_key": key}),
    )
    .await
}

fn sid(v: &Value) -> String {
    v["session"]["session_id"].as_str().unwrap().to_owned()
}

fn end_args(id: &str, key: &str, next: &str, rev: i64) -> Value {
    json!({"session_id": id, "expected_client_key": key, "summary": "did the work",
           "next_focus": next, "expected_focus_revision": rev})
}

async fn receipts(app: &brain_testkit::app::TestApp, tenant: &str) -> usize {
    let r = app
        .store
        .receipts(&TenantId::parse(tenant).unwrap())
        .await
        .unwrap();
    assert_eq!(verify_chain(&r), Ok(r.len()));
    r.len()
}

#[tokio::test]
async fn server_identifies_itself_and_lists_described_tools() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "a")).await;
    let info = c.peer_info().unwrap();
    let server = info.server_info.clone().unwrap();
    assert_eq!(server.name, "brain");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert!(
        info.instructions
            .as_deref()
            .unwrap_or("")
            .contains("brain_session_start")
    );
    let tools = c.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "brain_document_get",
            "brain_document_put",
            "brain_focus_get",
            "brain_focus_history",
            "brain_project_list",
            "brain_recall",
            "brain_receipts",
            "brain_remember",
            "brain_session_abandon",
            "brain_session_bind",
            "brain_session_end",
            "brain_session_get",
            "brain_session_list",
            "brain_session_relay",
            "brain_session_resume",
            "brain_session_start",
            "brain_todo_ack",
        ]
    );
    for t in &tools {
        assert!(t.output_schema.is_some(), "{}", t.name);
        assert_eq!(t.annotations.as_ref().unwrap().open_world_hint, Some(false));
    }
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn end_checks_run_in_the_order_of_the_spec() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let a = start(&c, "p", "a").await;
    let out = ok(
        &c,
        "brain_session_end",
        end_args(&sid(&a), "a", "0123456789", 0),
    )
    .await;
    assert_eq!(out["focus_outcome"], json!("applied"));
    let b = start(&c, "p", "b").await;
    let b_id = sid(&b);
    assert_eq!(
        b["briefing"]["base_focus"],
        json!({"body": "0123456789", "revision": 1})
    );
    let n0 = receipts(&app, "acme").await;

    // 1. unknown session (a well-formed id that exists nowhere)
    let e = refused(
        &c,
        "brain_session_end",
        end_args("sess_00000000000000000000000000000000", "b", "x", 1),
    )
    .await;
    assert_eq!(
        (e["code"].clone(), e["status"].clone()),
        (json!("session_not_found"), json!(404))
    );
    // 2. wrong client key wins over everything after it
    let mut args = end_args(&b_id, "not-b", " ", 99);
    args["summary"] = json!(" ");
    let e = refused(&c, "brain_session_end", args).await;
    assert_eq!(
        (e["code"].clone(), e["status"].clone()),
        (json!("client_key_mismatch"), json!(409))
    );
    // 4. blank nothing_to_capture_reason is refused; absent passes (below)
    let mut args = end_args(&b_id, "b", "0123456789", 1);
    args["nothing_to_capture_reason"] = json!("   ");
    let e = refused(&c, "brain_session_end", args).await;
    assert_eq!(e["code"], json!("invalid_argument"));
    assert_eq!(e["details"]["field"], json!("nothing_to_capture_reason"));
    assert_eq!(e["status"], json!(422));
    // 5. the override is refused without an elevation, even when nothing shrinks
    let mut args = end_args(&b_id, "b", "0123456789 grows", 1);
    args["allow_focus_shrink"] = json!(true);
    let e = refused(&c, "brain_session_end", args).await;
    assert_eq!(
        (e["code"].clone(), e["status"].clone()),
        (json!("focus_shrink_override_refused"), json!(403))
    );
    // 6. shrink guard: 6 of 10 refused with the floor; the session stays open
    let e = refused(&c, "brain_session_end", end_args(&b_id, "b", "012345", 1)).await;
    assert_eq!(e["code"], json!("base_focus_shrink"));
    assert_eq!(
        e["details"],
        json!({"current": 10, "proposed": 6, "floor": 7})
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("the floor is 7 of 10")
    );
    let s = ok(&c, "brain_session_get", json!({"session_id": b_id})).await;
    assert_eq!(s["session"]["status"], json!("open"));
    assert_eq!(
        receipts(&app, "acme").await,
        n0 + 5,
        "each refusal wrote its receipt, nothing else"
    );
    let f = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(
        (f["body"].clone(), f["revision"].clone()),
        (json!("0123456789"), json!(1))
    );

    // 7. a stale revision closes the session as conflicted and writes no focus
    let d = start(&c, "p", "d").await;
    let out = ok(
        &c,
        "brain_session_end",
        end_args(&sid(&d), "d", "0123456789 from d", 0),
    )
    .await;
    assert_eq!(out["focus_outcome"], json!("conflict"));
    assert_eq!(out["session"]["status"], json!("conflicted"));
    assert_eq!(out["current_focus_revision"], json!(1));
    assert!(
        out["focus_diff"]
            .as_str()
            .unwrap()
            .contains("-0123456789 from d")
    );
    let f = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(f["revision"], json!(1), "conflict wrote no focus");

    // 8. 7 of 10 (exactly the floor) passes, with no reason given
    let out = ok(&c, "brain_session_end", end_args(&b_id, "b", "0123456", 1)).await;
    assert_eq!(out["focus_outcome"], json!("applied"));
    assert_eq!(
        out["focus_at_end"],
        json!({"body": "0123456", "revision": 2})
    );
    assert_eq!(out["replayed"], json!(false));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn replay_and_closed_sessions() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let a = start(&c, "p", "a").await;
    let args = end_args(&sid(&a), "a", "the focus", 0);
    let first = ok(&c, "brain_session_end", args.clone()).await;
    let n = receipts(&app, "acme").await;
    // The same call again, with key order and defaults spelled differently.
    let mut again = json!({"expected_focus_revision": 0, "next_focus": "the focus",
        "summary": "did the work", "expected_client_key": "a", "session_id": sid(&a),
        "allow_focus_shrink": false});
    let replay = ok(&c, "brain_session_end", again.clone()).await;
    assert_eq!(replay["replayed"], json!(true));
    assert_eq!(replay["focus_outcome"], first["focus_outcome"]);
    assert_eq!(replay["session"], first["session"]);
    assert_eq!(
        receipts(&app, "acme").await,
        n,
        "a replay writes no receipt"
    );
    // A different call on the closed session.
    again["summary"] = json!("something else");
    let e = refused(&c, "brain_session_end", again).await;
    assert_eq!(e["code"], json!("session_closed"));
    assert_eq!(e["details"]["status"], json!("ended"));
    assert_eq!(receipts(&app, "acme").await, n + 1);
    let e = refused(
        &c,
        "brain_session_resume",
        json!({"session_id": sid(&a), "expected_client_key": "a"}),
    )
    .await;
    assert_eq!(e["code"], json!("session_closed"));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn bound_sessions_use_the_slot_revision() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let a = start(&c, "p", "a").await;
    ok(&c, "brain_session_end", end_args(&sid(&a), "a", "base", 0)).await;
    let b = start(&c, "p", "b").await;
    assert_eq!(b["session"]["started_focus_revision"], json!(1));
    let bound = ok(
        &c,
        "brain_session_bind",
        json!({"session_id": sid(&b), "expected_client_key": "b", "slot": "ui"}),
    )
    .await;
    assert_eq!(
        bound["slot"],
        json!({"name": "ui", "body": "", "revision": 0})
    );
    let e = refused(
        &c,
        "brain_session_bind",
        json!({"session_id": sid(&b), "expected_client_key": "b", "slot": "api"}),
    )
    .await;
    assert_eq!(e["code"], json!("already_bound"));
    let resumed = ok(
        &c,
        "brain_session_resume",
        json!({"session_id": sid(&b), "expected_client_key": "b"}),
    )
    .await;
    assert_eq!(resumed["slot"]["revision"], json!(0));
    // started_focus_revision (1) instead of the slot revision (0): conflict.
    let out = ok(
        &c,
        "brain_session_end",
        end_args(&sid(&b), "b", "slot body", 1),
    )
    .await;
    assert_eq!(out["focus_outcome"], json!("conflict"));
    let slot = ok(&c, "brain_focus_get", json!({"project": "p", "slot": "ui"})).await;
    assert_eq!(slot["revision"], json!(0));
    // Start bound, end with the slot revision: the slot moves, the base does not.
    let d = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "d", "slot": "ui"}),
    )
    .await;
    assert_eq!(d["slot"]["revision"], json!(0));
    // Each body once: the result's slot has it, the briefing names the slot.
    assert_eq!(d["slot"]["body"], json!(""));
    assert_eq!(d["briefing"]["slot"], json!({"name": "ui", "revision": 0}));
    let out = ok(
        &c,
        "brain_session_end",
        end_args(&sid(&d), "d", "slot body", 0),
    )
    .await;
    assert_eq!(out["focus_outcome"], json!("applied"));
    let slot = ok(&c, "brain_focus_get", json!({"project": "p", "slot": "ui"})).await;
    assert_eq!(
        (slot["body"].clone(), slot["revision"].clone()),
        (json!("slot body"), json!(1))
    );
    assert_eq!(slot["updated_by_session"], json!(sid(&d)));
    let base = ok(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(base["revision"], json!(1));
    // A bound shrink is slot_focus_shrink.
    let e2 = ok(
        &c,
        "brain_session_start",
        json!({"project": "p", "client_key": "e", "slot": "ui"}),
    )
    .await;
    let e = refused(&c, "brain_session_end", end_args(&sid(&e2), "e", "sl", 1)).await;
    assert_eq!(e["code"], json!("slot_focus_shrink"));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn window_counts_and_ledgers() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let a = start(&c, "p", "a").await;
    let _b = start(&c, "p", "b").await;
    let _other = start(&c, "q", "c").await;
    let mut loose = Vec::new();
    for i in 0..3 {
        let r = ok(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": "fact", "text": format!("loose {i}")}),
        )
        .await;
        loose.push(r["artifact"]["artifact_id"].clone());
    }
    ok(
        &c,
        "brain_remember",
        json!({"project": "q", "kind": "fact", "text": "other project"}),
    )
    .await;
    let mine = ok(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "decision", "text": "mine",
        "tags": ["x"], "session_id": sid(&a), "expected_client_key": "a"}),
    )
    .await;
    assert_eq!(mine["artifact"]["session_id"], json!(sid(&a)));
    let g = ok(&c, "brain_session_get", json!({"session_id": sid(&a)})).await;
    assert_eq!(g["ledger_size"], json!(1));
    assert_eq!(g["idle"], json!(false));
    let out = ok(&c, "brain_session_end", end_args(&sid(&a), "a", "next", 0)).await;
    assert_eq!(out["unattributed_in_window"]["count"], json!(3));
    assert_eq!(out["unattributed_in_window"]["ids"], Value::Array(loose));
    assert_eq!(out["remaining_open_session_count"], json!(1));
    let e = refused(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "note", "text": "late",
        "session_id": sid(&a), "expected_client_key": "a"}),
    )
    .await;
    assert_eq!(e["code"], json!("session_closed"));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn dry_runs_write_nothing() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let a = start(&c, "p", "a").await;
    let n = receipts(&app, "acme").await;
    let mut args = end_args(&sid(&a), "a", "next", 0);
    args["dry_run"] = json!(true);
    let out = ok(&c, "brain_session_end", args.clone()).await;
    assert_eq!(
        (out["dry_run"].clone(), out["would"].clone()),
        (json!(true), json!("applied"))
    );
    args["summary"] = json!("");
    assert_eq!(
        refused(&c, "brain_session_end", args).await["code"],
        json!("invalid_argument")
    );
    let out = ok(
        &c,
        "brain_session_abandon",
        json!({"session_id": sid(&a), "expected_client_key": "a",
        "reason": "preview", "dry_run": true}),
    )
    .await;
    assert_eq!(out["would"], json!("abandoned"));
    assert_eq!(receipts(&app, "acme").await, n);
    let g = ok(&c, "brain_session_get", json!({"session_id": sid(&a)})).await;
    assert_eq!(g["session"]["status"], json!("open"));
    assert_eq!(
        ok(&c, "brain_focus_get", json!({"project": "p"})).await["revision"],
        json!(0)
    );
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn relay_and_abandon() {
    let app = spawn_app().await;
    let agent = app.client(&token("acme", "agent")).await;
    let a = ok(
        &agent,
        "brain_session_start",
        json!({"project": "p", "client_key": "a", "slot": "ui"}),
    )
    .await;
    let mut args = end_args(&sid(&a), "a", "0123456789", 0);
    args["to_client_key"] = json!("b");
    let out = ok(&agent, "brain_session_relay", args).await;
    assert_eq!(out["session"]["status"], json!("relayed"));
    assert_eq!(
        out["slot"],
        json!({"name": "ui", "body": "0123456789", "revision": 1})
    );
    let b_id = out["new_session"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(out["new_session"]["client_key"], json!("b"));
    // An agent's relay may not override the shrink guard; an operator's may.
    let mut shrink = end_args(&b_id, "b", "01", 1);
    shrink["to_client_key"] = json!("c");
    shrink["allow_focus_shrink"] = json!(true);
    assert_eq!(
        refused(&agent, "brain_session_relay", shrink.clone()).await["code"],
        json!("focus_shrink_override_refused")
    );
    let operator = app
        .client(&brain_testkit::app::token_with(
            json!({"tenant": "acme", "sub": "op", "role": "operator"}),
        ))
        .await;
    let out = ok(&operator, "brain_session_relay", shrink).await;
    assert_eq!(out["focus_outcome"], json!("applied"));
    let last = app
        .store
        .receipts(&TenantId::parse("acme").unwrap())
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert!(
        last.elevated,
        "the receipt records that the override was used"
    );
    // Unbound sessions cannot relay.
    let u = start(&agent, "p", "u").await;
    let mut args = end_args(&sid(&u), "u", "x", 0);
    args["to_client_key"] = json!("z");
    assert_eq!(
        refused(&agent, "brain_session_relay", args).await["code"],
        json!("relay_requires_slot")
    );
    // Abandon needs consent, then closes without writing focus, and replays.
    let ab = json!({"session_id": sid(&u), "expected_client_key": "u", "reason": "wrong project"});
    let e = refused(&agent, "brain_session_abandon", ab.clone()).await;
    assert_eq!(
        (e["code"].clone(), e["status"].clone()),
        (json!("confirm_required"), json!(428))
    );
    let mut ab = ab;
    ab["confirm"] = json!(true);
    let out = ok(&agent, "brain_session_abandon", ab.clone()).await;
    assert_eq!(out["session"]["status"], json!("abandoned"));
    assert_eq!(out["session"]["abandon_reason"], json!("wrong project"));
    assert_eq!(
        ok(&agent, "brain_session_abandon", ab).await["replayed"],
        json!(true)
    );
    agent.cancel().await.unwrap();
    operator.cancel().await.unwrap();
}

#[tokio::test]
async fn briefing_reports_recovery_and_recent_sessions() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let first = start(&c, "p", "a").await;
    let x = start(&c, "p", "x").await;
    ok(&c, "brain_session_end", end_args(&sid(&x), "x", "focus", 0)).await;
    let second = start(&c, "p", "a").await;
    let rec = &second["briefing"]["recovery"];
    assert_eq!(rec["session_id"], json!(sid(&first)));
    assert_eq!(rec["idle"], json!(false));
    assert_eq!(rec["ledger_size"], json!(0));
    assert_eq!(second["briefing"]["open_sessions"], json!(2));
    assert_eq!(
        second["briefing"]["recent_sessions"][0]["session_id"],
        json!(sid(&x))
    );
    assert_eq!(
        second["briefing"]["recent_sessions"][0]["status"],
        json!("ended")
    );
    assert_eq!(second["briefing"]["base_focus"]["revision"], json!(1));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn tenants_are_walled() {
    let app = spawn_app().await;
    let acme = app.client(&token("acme", "agent")).await;
    let globex = app.client(&token("globex", "agent")).await;
    let a = start(&acme, "shared", "k").await;
    for (tool, args) in [
        ("brain_session_get", json!({"session_id": sid(&a)})),
        ("brain_session_end", end_args(&sid(&a), "k", "stolen", 0)),
        (
            "brain_session_resume",
            json!({"session_id": sid(&a), "expected_client_key": "k"}),
        ),
        (
            "brain_session_bind",
            json!({"session_id": sid(&a), "expected_client_key": "k", "slot": "s"}),
        ),
        (
            "brain_remember",
            json!({"project": "shared", "kind": "note", "text": "t", "session_id": sid(&a), "expected_client_key": "k"}),
        ),
    ] {
        assert_eq!(
            refused(&globex, tool, args).await["code"],
            json!("session_not_found"),
            "{tool}"
        );
    }
    let g = start(&globex, "shared", "k").await;
    ok(
        &globex,
        "brain_session_end",
        end_args(&sid(&g), "k", "globex focus", 0),
    )
    .await;
    assert_eq!(
        ok(&acme, "brain_focus_get", json!({"project": "shared"})).await["revision"],
        json!(0)
    );
    assert_eq!(
        ok(&globex, "brain_focus_get", json!({"project": "shared"})).await["body"],
        json!("globex focus")
    );
    assert_eq!(
        ok(&acme, "brain_session_get", json!({"session_id": sid(&a)})).await["session"]["status"],
        json!("open")
    );
    acme.cancel().await.unwrap();
    globex.cancel().await.unwrap();
}

#[tokio::test]
async fn unknown_tools_are_protocol_errors() {
    let app = spawn_app().await;
    let c = app.client(&token("acme", "agent")).await;
    let err = c
        .call_tool(rmcp::model::CallToolRequestParams::new("brain_nope"))
        .await
        .unwrap_err();
    assert!(
        format!("{err:?}").contains("-32602") || format!("{err}").contains("unknown tool"),
        "{err:?}"
    );
    let r = call(&c, "brain_focus_get", json!({"project": "p"})).await;
    assert_eq!(r.is_error, Some(false));
    c.cancel().await.unwrap();
}

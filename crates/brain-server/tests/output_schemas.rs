//! Every tool's real results — successes and refusals — validate against the
//! output schema its definition declares (MCP clients validate
//! `structuredContent`; a schema that lies breaks them). Every listed tool is
//! exercised, so a new tool without a call here fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use brain_server::profiles::Profiles;
use brain_testkit::app::{Client, TestOptions, call, jwt_config, spawn_app_opts, token_with};
use serde_json::{Value, json};

struct Checker {
    schemas: BTreeMap<String, jsonschema::Validator>,
    seen: BTreeSet<String>,
    failures: Vec<String>,
}

impl Checker {
    async fn new(c: &Client) -> Self {
        let mut schemas = BTreeMap::new();
        for t in c.list_all_tools().await.unwrap() {
            let schema = Value::Object((*t.output_schema.clone().unwrap()).clone());
            let v = jsonschema::validator_for(&schema)
                .unwrap_or_else(|e| panic!("{}: the output schema does not compile: {e}", t.name));
            schemas.insert(t.name.to_string(), v);
        }
        Self {
            schemas,
            seen: BTreeSet::new(),
            failures: Vec::new(),
        }
    }

    /// Call the tool and check its structured content; the content.
    async fn call(&mut self, c: &Client, tool: &str, args: Value) -> Value {
        let r = call(c, tool, args.clone()).await;
        let content = r.structured_content.clone().unwrap_or(Value::Null);
        self.seen.insert(tool.to_owned());
        let v = &self.schemas[tool];
        let errors: Vec<String> = v.iter_errors(&content).map(|e| e.to_string()).collect();
        if !errors.is_empty() {
            self.failures
                .push(format!("{tool} {args}: {errors:?}\n  result: {content}"));
        }
        content
    }
}

#[tokio::test]
async fn every_result_matches_its_declared_output_schema() {
    let app = spawn_app_opts(
        jwt_config(),
        TestOptions {
            profiles: Profiles::all(),
            ..TestOptions::default()
        },
    )
    .await;
    let op = token_with(json!({"tenant": "acme", "sub": "op", "role": "operator"}));
    let c = app.client(&op).await;
    let mut k = Checker::new(&c).await;

    // Sessions, unbound and bound.
    let s = k
        .call(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": "a"}),
        )
        .await;
    let sid = s["session"]["session_id"].clone();
    let b = k
        .call(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": "b"}),
        )
        .await;
    let bid = b["session"]["session_id"].clone();
    let bound = k
        .call(
            &c,
            "brain_session_bind",
            json!({"session_id": bid, "expected_client_key": "b", "slot": "s1"}),
        )
        .await;
    k.call(
        &c,
        "brain_session_resume",
        json!({"session_id": sid, "expected_client_key": "a"}),
    )
    .await;
    // Bound from the start, and resumed bound: the slot's body once, in slot.
    let sb = k
        .call(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": "sb", "slot": "s2"}),
        )
        .await;
    k.call(
        &c,
        "brain_session_resume",
        json!({"session_id": sb["session"]["session_id"], "expected_client_key": "sb"}),
    )
    .await;
    k.call(
        &c,
        "brain_session_resume",
        json!({"session_id": bid, "expected_client_key": "nope"}),
    )
    .await;
    // Memory.
    for (kind, text) in [
        ("fact", "schemas are contracts"),
        ("decision", "validate them"),
        ("todo", "write the test"),
    ] {
        k.call(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": kind, "text": text, "tags": ["t"],
            "session_id": sid, "expected_client_key": "a"}),
        )
        .await;
    }
    let todo = k
        .call(
            &c,
            "brain_remember",
            json!({"project": "p", "kind": "todo", "text": "ack me"}),
        )
        .await;
    k.call(
        &c,
        "brain_remember",
        json!({"project": "p", "kind": "bogus", "text": "x"}),
    )
    .await;
    k.call(
        &c,
        "brain_recall",
        json!({"project": "p", "query": "schemas", "tags": ["t"]}),
    )
    .await;
    // Listings: newest first, the inbox, a keyset page.
    let page = k
        .call(&c, "brain_recall", json!({"project": "p", "limit": 2}))
        .await;
    k.call(
        &c,
        "brain_recall",
        json!({"project": "p", "limit": 2, "cursor": page["next_cursor"]}),
    )
    .await;
    k.call(&c, "brain_recall", json!({"project": "p", "inbox": true}))
        .await;
    k.call(
        &c,
        "brain_recall",
        json!({"project": "p", "cursor": "not-a-cursor"}),
    )
    .await;
    k.call(
        &c,
        "brain_todo_ack",
        json!({"project": "p", "artifact_ids": [todo["artifact"]["artifact_id"]]}),
    )
    .await;
    k.call(
        &c,
        "brain_document_put",
        json!({"project": "p", "document": "critique", "body": "fine", "expected_revision": 0}),
    )
    .await;
    k.call(
        &c,
        "brain_document_put",
        json!({"project": "p", "document": "critique", "body": "stale", "expected_revision": 0}),
    )
    .await;
    k.call(&c, "brain_document_put", json!({"project": "p", "document": "executive_state",
        "body": "{\"objective\": \"o\", \"missions\": [\"schemas\"], \"pending_decisions\": []}", "expected_revision": 0})).await;
    k.call(
        &c,
        "brain_document_get",
        json!({"project": "p", "document": "critique"}),
    )
    .await;
    // Ends: applied, dry run, conflict, replay, refusal.
    let end = json!({"session_id": sid, "expected_client_key": "a", "summary": "s",
                     "next_focus": "the focus", "expected_focus_revision": 0});
    let mut dry = end.clone();
    dry["dry_run"] = json!(true);
    k.call(&c, "brain_session_end", dry).await;
    k.call(&c, "brain_session_end", end.clone()).await;
    k.call(&c, "brain_session_end", end).await;
    let c2 = k
        .call(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": "c"}),
        )
        .await;
    k.call(
        &c,
        "brain_session_end",
        json!({"session_id": c2["session"]["session_id"], "expected_client_key": "c",
        "summary": "s", "next_focus": "late", "expected_focus_revision": 0}),
    )
    .await;
    k.call(
        &c,
        "brain_session_end",
        json!({"session_id": bid, "expected_client_key": "wrong",
        "summary": "s", "next_focus": "x", "expected_focus_revision": 0}),
    )
    .await;
    // Relay the bound one (a dry run first), then a stale relay; abandon another.
    let relay = json!({"session_id": bid, "expected_client_key": "b", "summary": "hand over",
        "next_focus": "slot body", "expected_focus_revision": bound["slot"]["revision"], "to_client_key": "d"});
    let mut dry = relay.clone();
    dry["dry_run"] = json!(true);
    k.call(&c, "brain_session_relay", dry).await;
    let relayed = k.call(&c, "brain_session_relay", relay.clone()).await;
    k.call(&c, "brain_session_relay", relay).await;
    k.call(
        &c,
        "brain_session_relay",
        json!({"session_id": relayed["new_session"]["session_id"],
        "expected_client_key": "d", "summary": "stale", "next_focus": "stale body",
        "expected_focus_revision": 0, "to_client_key": "e"}),
    )
    .await;
    let e = k
        .call(
            &c,
            "brain_session_start",
            json!({"project": "p", "client_key": "e"}),
        )
        .await;
    k.call(
        &c,
        "brain_session_abandon",
        json!({"session_id": e["session"]["session_id"], "expected_client_key": "e",
        "reason": "not needed", "confirm": true}),
    )
    .await;
    k.call(
        &c,
        "brain_session_abandon",
        json!({"session_id": e["session"]["session_id"], "expected_client_key": "e",
        "reason": "again"}),
    )
    .await;
    // Reads.
    k.call(&c, "brain_focus_get", json!({"project": "p"})).await;
    k.call(&c, "brain_focus_get", json!({"project": "p", "slot": "s1"}))
        .await;
    k.call(&c, "brain_focus_history", json!({"project": "p"}))
        .await;
    k.call(&c, "brain_session_get", json!({"session_id": sid}))
        .await;
    k.call(
        &c,
        "brain_session_get",
        json!({"session_id": "sess_00000000000000000000000000000000"}),
    )
    .await;
    k.call(&c, "brain_session_list", json!({"project": "p"}))
        .await;
    k.call(&c, "brain_receipts", json!({"limit": 5})).await;
    k.call(&c, "brain_receipts", json!({"order": "newest"}))
        .await;
    k.call(&c, "brain_project_list", json!({})).await;
    k.call(&c, "brain_project_list", json!({"prefix": "nothing-here"}))
        .await;
    // Profiles.
    k.call(&c, "brain_session", json!({"phase": "start"})).await;
    k.call(
        &c,
        "brain_session",
        json!({"phase": "end", "critique": "ok"}),
    )
    .await;
    k.call(
        &c,
        "brain_session",
        json!({"phase": "end", "session_id": "sess_00000000000000000000000000000000"}),
    )
    .await;
    let raw = k.call(&c, "runtime_session_open", json!({})).await;
    k.call(
        &c,
        "runtime_session_close",
        json!({"session_id": raw["session_id"]}),
    )
    .await;
    k.call(
        &c,
        "runtime_session_close",
        json!({"session_id": raw["session_id"], "dry_run": true}),
    )
    .await;
    k.call(
        &c,
        "runtime_session_close",
        json!({"session_id": raw["session_id"], "confirm": true}),
    )
    .await;
    k.call(
        &c,
        "runtime_session_close",
        json!({"session_id": raw["session_id"], "confirm": true}),
    )
    .await;

    // The validator is not vacuous: a result of the wrong shape fails.
    assert!(!k.schemas["brain_focus_get"].is_valid(&json!({"body": 1, "revision": "one"})));
    assert!(!k.schemas["brain_receipts"].is_valid(&json!({"receipts": 5})));
    let listed: BTreeSet<String> = k.schemas.keys().cloned().collect();
    let missing: Vec<&String> = listed.difference(&k.seen).collect();
    assert!(
        missing.is_empty(),
        "tools never exercised here: {missing:?}"
    );
    assert!(
        k.failures.is_empty(),
        "results that break their schema:\n{}",
        k.failures.join("\n")
    );
    c.cancel().await.unwrap();
}
